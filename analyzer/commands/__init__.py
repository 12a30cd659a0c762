"""One module per subcommand (besides ``analyze``, which lives in cli.py). Each module defines a
``click.Command`` named ``command`` and keeps heavy imports inside the function body, so that
``ncclscope --help`` stays fast."""
