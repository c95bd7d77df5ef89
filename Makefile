# SPDX-License-Identifier: BSD-3-Clause
# The README's two commands, for those who type make.
.PHONY: run test
run:
	bash devtools/dpv.sh run
test:
	bash devtools/dpv.sh test
