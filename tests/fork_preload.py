"""Imported once by the fork server the tests start their separate CLI runs from (helpers.start_cli):
the click command built there, so each forked run starts with it as it starts with the package
imported, instead of building it again (helpers.reuse_the_click_command)."""

import typer.main

from helpers import reuse_the_click_command
from pipeline.cli import app

reuse_the_click_command()
typer.main.get_command(app)
