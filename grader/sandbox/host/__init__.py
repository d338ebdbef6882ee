"""The grading process's side of the sandbox: ``zygote`` (its handle on the zygote, which forks the workers),
``client`` (a ``WorkerSession``: one worker per submission, restarts and time-outs), ``proxy`` (the objects the
suites call, and the guarded values they get back) and ``problems`` (what went wrong, in the student's words). No
module here runs in a worker."""
