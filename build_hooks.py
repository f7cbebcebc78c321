"""setuptools build hook (pyproject.toml [tool.setuptools.cmdclass]): bytecode for an editable install.

A wheel install compiles the modules it installs; an editable install (`pip install -e .`) installs
none, and where PYTHONDONTWRITEBYTECODE is set (this project's Dockerfile, many CI and dev machines)
Python then never writes the .pyc files either: every process compiles every module it imports from
source, ~100 ms of each `vramwise estimate`. So the editable build compiles the packages in place, as
`python -m compileall` would. A module edited afterwards is compiled in memory as usual (Python checks
each .pyc against its source's modification time and size), so nothing stale is ever run.
"""

from __future__ import annotations

import compileall

from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            for package in self.packages:  # every package and sub-package, each folder on its own
                compileall.compile_dir(self.get_package_dir(package), maxlevels=0, quiet=1)
