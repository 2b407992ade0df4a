"""The metadata is in setup.cfg. This file exists for one case: ``pip install -e .`` with setuptools
older than 64 (the PYNQ v3.0.1 image has 59.6, and pip 22.0.2), which has no PEP 660 editable
install and runs ``setup.py develop`` instead. That puts the checkout itself on ``sys.path``, where
``zynqflow.host`` (the directory ``host/``, mapped by ``package_dir``) cannot be found: pip says it
succeeded, then ``import zynqflow.host`` fails. Here ``develop`` puts a directory on ``sys.path``
that holds ``zynqflow/<package>`` as links to the checkout's directories, so the editable install
imports the checkout's code. setuptools >= 64 never runs this (its editable wheels map the packages
themselves)."""

import os

from setuptools import setup
from setuptools.command.develop import develop

LEGACY_EDITABLE = os.path.join("build", "legacy-editable")


class LegacyEditable(develop):
    """``setup.py develop`` with ``build/legacy-editable`` (``zynqflow/<pkg>`` -> ``<pkg>/``) on sys.path."""

    def finalize_options(self):
        here = os.path.dirname(os.path.abspath(__file__))
        ns = os.path.join(here, LEGACY_EDITABLE, "zynqflow")
        os.makedirs(ns, exist_ok=True)
        for pkg, src in (self.distribution.package_dir or {}).items():
            name = pkg.split(".")
            if name[0] != "zynqflow" or len(name) != 2:
                continue
            link = os.path.join(ns, name[1])
            target = os.path.relpath(os.path.join(here, src), ns)
            if os.path.islink(link) and os.readlink(link) != target:
                os.unlink(link)
            if not os.path.lexists(link):
                os.symlink(target, link)
        self.distribution.get_command_obj("egg_info").egg_base = LEGACY_EDITABLE
        super().finalize_options()


setup(cmdclass={"develop": LegacyEditable})
