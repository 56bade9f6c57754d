"""pytest setup for moka's Python tests: every test starts in a fresh default workspace."""
import pytest

from moka import workspace


@pytest.fixture(autouse=True)
def fresh_workspace():
    workspace.SwitchWorkspace("default")
    workspace.ResetWorkspace()
    yield
