from onnxlint.cli import main

raise SystemExit(main())
