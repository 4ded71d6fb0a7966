# The SDK's version follows the server's (docs/sdk-python.md, "Versions"):
# sgam reports the module version it was built as (internal/cli's version(),
# from debug.ReadBuildInfo): a release tag vX.Y.Z, or "(devel)" or a Go
# pseudo-version from a checkout. The SDK of the commit tagged vX.Y.Z is
# X.Y.Z; between releases, and before the first, it is 0.0.0.dev0.
# tests/test_version.py fails when a commit tagged vX.Y.Z says otherwise.
__version__ = "0.0.0.dev0"
