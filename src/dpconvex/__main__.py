"""python -m dpconvex (importing this module runs nothing)."""

from .cli import main

if __name__ == "__main__":
    main()
