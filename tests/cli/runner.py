"""Run the command line in-process: (exit code, stdout, stderr)."""

import pytest

from dpconvex.cli import main


def run(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err
