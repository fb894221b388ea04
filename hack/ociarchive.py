#!/usr/bin/env python3
"""Reads an OCI image archive (make dist's <name>_<tag>.oci.tar: an OCI
layout holding one image index) without a container engine:

  hack/ociarchive.py digest ARCHIVE     the digest of its image index, which
                                        a registry serves for it once pushed
  hack/ociarchive.py platforms ARCHIVE  a line per platform's image: its
                                        architecture, digest and the names of
                                        the files in its layers (commas), which
                                        say whose SBOMs it carries

hack/sign.sh and hack/test-dist.sh read the archives with it.
"""
import io
import json
import os
import sys
import tarfile


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("digest", "platforms"):
        sys.exit(__doc__)
    oci = tarfile.open(sys.argv[2])

    def blob(digest):
        return oci.extractfile("blobs/sha256/" + digest.split(":", 1)[1]).read()

    index = json.loads(oci.extractfile("index.json").read())["manifests"]
    if len(index) != 1:
        sys.exit(f"{sys.argv[2]}: index.json names {len(index)} images, want one")
    if sys.argv[1] == "digest":
        print(index[0]["digest"])
        return
    top = json.loads(blob(index[0]["digest"]))
    for m in top.get("manifests", []):
        files = set()
        for layer in json.loads(blob(m["digest"]))["layers"]:
            with tarfile.open(fileobj=io.BytesIO(blob(layer["digest"]))) as t:
                files |= {os.path.basename(f.name) for f in t.getmembers() if f.isfile()}
        print(m["platform"]["architecture"], m["digest"], ",".join(sorted(files)))


if __name__ == "__main__":
    main()
