"""`ncclscope serve [PATH | --live DIR] [--diff RUN_A RUN_B] [--host 127.0.0.1] [--port 8050] [--token T]`:
the dashboard.

Every route of every bind asks for a token, new at each start unless given (``--token``, or better the
``NCCLSCOPE_DASHBOARD_TOKEN`` variable: a command line is visible to every user of the node), printed in the
URL. The server is waitress with deadlines and a connection limit (``dashboard/server.py``).
"""
from __future__ import annotations

from pathlib import Path

import click

TOKEN_HELP = ("Access token every request must carry (default: a new random one each start, printed in the URL). "
              "Also read from NCCLSCOPE_DASHBOARD_TOKEN, which other users cannot see: a token given here can be "
              "read in the process list.")


@click.command("serve")
@click.argument("path", required=False, type=click.Path(exists=True, path_type=Path))
@click.option("--live", "live", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A run folder in progress: re-analysed when its files change; alerts.jsonl shown as a banner.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Every address, loopback included, asks for the token.")
@click.option("--port", default=None, type=click.IntRange(0, 65535),
              help="Port to listen on. Default 8050, or the next free one when another process holds 8050; "
                   "a port given here and taken is an error.")
@click.option("--token", default=None, envvar="NCCLSCOPE_DASHBOARD_TOKEN", show_envvar=True, help=TOKEN_HELP)
@click.option("--diff", "diff", nargs=2, default=None, metavar="RUN_A RUN_B",
              type=click.Path(exists=True, path_type=Path),
              help="Analyse two runs of one job before serving and open on the Diff page comparing them.")
@click.pass_context
def command(ctx: click.Context, path: Path | None, live: Path | None, host: str, port: int | None,
            token: str | None, diff: tuple[Path, Path] | None) -> None:
    """Serve the dashboard for a finished run (PATH: folder, files' folder or archive) or a live one (--live DIR).

    Without PATH, runs are uploaded from the browser. Never runs in debug mode.
    """
    if path is not None and live is not None:
        raise click.UsageError("give either PATH or --live DIR, not both")
    from ncclscope.dashboard import server as dash_server
    from ncclscope.dashboard.access import MIN_TOKEN_CHARS, headers_carry_token, new_token
    from ncclscope.dashboard.app import MAX_REQUEST_BYTES, create_app, is_loopback

    from ..ports import DASHBOARD_PORT, free_port, port_taken, url

    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise click.BadParameter(f"at least {MIN_TOKEN_CHARS} characters (leave it out for a random one)",
                                 param_hint="--token / NCCLSCOPE_DASHBOARD_TOKEN")
    if token is not None and ctx.get_parameter_source("token") == click.core.ParameterSource.COMMANDLINE:
        click.echo("ncclscope: warning: a token given with --token is visible to every user of this machine "
                   "(ps); set NCCLSCOPE_DASHBOARD_TOKEN instead", err=True)
    if port is None:  # the default port, or the next free one: a second dashboard is not an error
        port, why = free_port(DASHBOARD_PORT, host)
        if why is not None:
            click.echo(f"ncclscope: port {DASHBOARD_PORT} on {host} is taken ({why}); using port {port}", err=True)
    elif port == 0:
        port = free_port(0, host)[0]  # the system's choice, known before the URL is printed
    else:
        taken = port_taken(port, host)
        if taken:  # say so before the app is built and a URL that belongs to another process is printed
            raise click.ClickException(f"cannot serve on {host} port {port}: {taken} (another process holds it?); "
                                       "choose another with --port, or leave --port out to take a free one")
    secret = token or new_token()
    app = create_app(path=path, live=live, token=secret, host=host)
    page = ""
    if diff is not None:  # both analysed before the URL is printed: the page opens on them
        from ncclscope.dashboard.pages.diff import serve_pair

        click.echo(f"ncclscope: analysing {diff[0]} and {diff[1]}", err=True)
        try:
            page = serve_pair(app, diff)
        except BaseException:
            _close(app)
            raise
    limits = dash_server.Limits(max_body_bytes=MAX_REQUEST_BYTES)
    try:
        srv = dash_server.make_server(app.server, host, port, limits,
                                      admit=lambda headers, query: headers_carry_token(secret, headers, query))
    except OSError as e:  # taken between the check and the bind
        _close(app)
        raise click.ClickException(f"cannot serve on {host} port {port}: {e.strerror or e}") from None
    click.echo(f"ncclscope dashboard: {url(host, port)}{page}?token={secret}", err=True)
    click.echo("every request needs the token (a cookie once the URL is opened; 'Authorization: Bearer <token>' "
               "for scripts and /metrics)" + ("" if is_loopback(host) else
                                              "; share this URL only with people who may read the logs"), err=True)
    import signal

    before = signal.signal(signal.SIGTERM, lambda _s, _f: srv.stop())  # `run --dashboard` ends us so
    try:
        srv.run()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, before)
        _close(app)


def _close(app: object) -> None:
    """Uploads and unpacked archives are deleted on exit."""
    server = getattr(app, "server", None)
    close = getattr(server.config.get("ncclscope_store"), "close", None) if server is not None else None
    if close is not None:
        close()
