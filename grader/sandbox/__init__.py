"""The sandboxed worker, the second stage: student code runs only in a worker process confined here.

``client`` is the grading process's side (the zygote that forks workers, a session with one worker, the proxy
objects the suites call); ``worker`` runs inside the sandbox; ``wire`` is what passes between them; ``confine``
and ``cgroup`` build the sandbox; ``lifeline`` ties every helper process's life to its parent's.
"""
