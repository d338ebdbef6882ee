"""The jailed side of the sandbox: what runs in the zygote and in the workers it forks. ``lifeline`` starts the zygote
tied to the grading process's life; ``worker`` is the zygote and the workers (imports the submission, serves calls);
``confine`` builds a worker's sandbox with ``rootfs`` (its read-only root), ``seccomp`` (its syscall filter),
``cgroup`` (a CPU per worker), ``uids`` (the unprivileged uids) and ``syscalls`` (libc). The grading process calls
``confine.probe`` only, to know whether a sandbox can be built here."""
