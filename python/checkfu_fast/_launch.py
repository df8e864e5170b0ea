"""The ``checkfu-fast`` entry point: a re-run of ``report`` whose output the memo holds is
answered before the command line's modules are imported (:func:`checkfu_fast.report_cache.
memo_hit`: a walk, a stat per file, one read); everything else is :func:`checkfu_fast.cli.main`.
"""

from __future__ import annotations

import contextlib
import os
import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["report"] and sys.stdout is not None:
        from .report_cache import memo_hit

        text = memo_hit(args[1:])
        if text is not None:
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except BrokenPipeError:  # e.g. piped into head: quietly, as the full command
                with contextlib.suppress(OSError):
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except OSError as exc:
                print(f"checkfu-fast: standard output: {exc.strerror or exc}", file=sys.stderr)
                return 1
            return 0
    from .cli import main as cli_main

    # None when this process is the command (cli.main then takes sys.argv and may set
    # process-wide options, e.g. normalize's no transparent huge pages)
    return cli_main(None if argv is None else args)
