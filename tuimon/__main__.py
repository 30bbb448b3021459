from tuimon.cli import main

raise SystemExit(main())
