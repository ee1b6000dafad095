"""The in-process fake GitHub server shared by all tests (fixture `fake_github`)."""
