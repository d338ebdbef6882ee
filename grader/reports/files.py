"""Files: every report is written atomically (``write_atomic``; JSON with ``write_json``)."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_atomic(content: str | bytes, path: str | os.PathLike) -> None:
    """Write a file (text as UTF-8) atomically: readers see the old file or the new one, never half of one; a write
    that fails leaves no temporary file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content  # text that is not valid Unicode fails here
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")  # a short name whatever the target's
    try:
        with open(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o666 & ~_UMASK)  # as open() would have made it
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_json(data: dict, path: str | os.PathLike) -> None:
    """Write JSON atomically (``write_atomic``); non-ASCII characters are escaped, so the file is valid UTF-8 whatever
    the strings hold."""
    write_atomic(json.dumps(data, indent=2) + "\n", path)
