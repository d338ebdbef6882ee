"""The sandboxed worker, the second stage: student code runs only in a worker process confined here.

The grading process's side: ``client`` (the zygote that forks workers, a ``WorkerSession`` with one worker),
``proxy`` (the objects the suites call) and ``problems`` (what went wrong, in the student's words). Inside the
sandbox: ``worker``. Between them: ``wire``. Building the sandbox: ``confine`` with ``rootfs``, ``seccomp``,
``limits``, ``syscalls`` and ``uids``, and ``cgroup``; ``lifeline`` ties every helper process's life to its
parent's and starts the zygote.
"""

# The option of `grader grade`, `batch` and `ci` that lets code one trusts run where no sandbox can be built.
TRUSTED_OPTION = "--allow-unsandboxed"
