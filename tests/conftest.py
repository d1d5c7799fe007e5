import pytest

from hybridai.core import registry


@pytest.fixture
def fresh_registry():
    """Forget loaded plugins before and after a test that changes sys.path."""
    registry.reload()
    yield registry
    registry.reload()
