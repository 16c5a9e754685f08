from tilefoundry.cli.main import entry

entry()
