"""`commlens` and `python -m commlens`: runs the bundled program with the same arguments.
One option of its own: --plugin-path prints the plugin's path (for NCCL_PROFILER_PLUGIN)."""
import os
import subprocess
import sys

import commlens

_OWN_HELP = ("  commlens --plugin-path                  the installed plugin's path: "
             "export NCCL_PROFILER_PLUGIN=$(commlens --plugin-path)")


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        if args == ["--plugin-path"]:
            print(commlens.plugin_path())
            return 0
        cli = commlens.cli_path()
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    if not os.access(cli, os.X_OK):
        print("commlens: %s is not executable (the wheel was unpacked without its file modes: "
              "reinstall it with pip)" % cli, file=sys.stderr)
        return 2
    if args in (["--help"], ["-h"]):
        rc = subprocess.call([cli] + args)
        print(_OWN_HELP)
        return rc
    sys.stdout.flush()
    os.execv(cli, ["commlens"] + args)


if __name__ == "__main__":
    sys.exit(main())
