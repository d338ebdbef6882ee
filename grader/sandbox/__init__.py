"""The sandboxed worker, the second stage: student code runs only in a worker process confined here.

Two sides: ``host`` is the grading process's (the zygote's handle, the worker session, the proxies the suites call,
what went wrong in the student's words); ``jail`` is what runs in the zygote and the workers (the worker, the
lifeline that starts the zygote, and what builds the sandbox: confine, rootfs, seccomp, cgroup, uids, syscalls).
What both sides share is here: ``wire`` (between them), ``limits``, ``seed``, ``dropout`` (keyed dropout) and
``imports`` (the import rule).
"""

# The option of `grader grade`, `batch` and `ci` that lets code one trusts run where no sandbox can be built.
TRUSTED_OPTION = "--allow-unsandboxed"
