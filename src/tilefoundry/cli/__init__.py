"""The `tilefoundry` command line, thin over the library."""
