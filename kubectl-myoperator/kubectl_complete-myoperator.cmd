@echo off
rem kubectl (1.26 and later) completes "kubectl myoperator ..." by running
rem this with the words typed; the plugin answers in cobra's protocol.
kubectl-myoperator.exe __complete %*
