"""python -m dpconvex"""

from .cli import main

main()
