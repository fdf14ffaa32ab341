from olmtool.cli import main

main()
