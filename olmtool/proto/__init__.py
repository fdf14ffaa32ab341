"""Generated stubs of ``registry.proto`` (package ``api``); see :mod:`.generate`."""
