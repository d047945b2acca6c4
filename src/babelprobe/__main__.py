from babelprobe.cli import app

app()
