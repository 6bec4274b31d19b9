from perfgate.cli import entry

entry()
