# hygiene.mk: rules of the tree that the compiler does not enforce, checked in `make test`:
# test/hygiene/check_tree.py: no global symbol that nothing references (dead code, or it
# should be static), and no comment citing a file or function that does not exist;
# no text citing a tracker issue, a lent machine's kind or a development session (the history
# is CHANGELOG.md's); the decision records' shape (docs/decisions/); and docs/architecture.md
# naming every stage folder and explaining the code's prefixes, on one page;
# test/hygiene/check_circles.py: no circle of source files (includes and calls), and the
# CLI's stages only call down;
# test/hygiene/check_deps.sh: only the goals deps, test and demo call apt-get;
# test/hygiene/check_sizes.py: no C file over 800 lines, no function over 120 (71 in the
# plugin), each offender listed with its size; --self-test plants offenders in a temporary
# folder and checks that they are found.
HYGIENE ?= 1
ifeq ($(HYGIENE),1)
TEST_MORE += --clear --cmd 'python3 test/hygiene/check_tree.py symbols $(abspath $(BUILD))' \
             --cmd 'python3 test/hygiene/check_tree.py comments' \
             --cmd 'python3 test/hygiene/check_tree.py history' \
             --cmd 'python3 test/hygiene/check_tree.py decisions' \
             --cmd 'python3 test/hygiene/check_tree.py architecture' \
             --cmd 'python3 test/hygiene/check_circles.py $(abspath $(BUILD))' \
             --cmd 'sh test/hygiene/check_deps.sh' \
             --cmd 'python3 test/hygiene/check_sizes.py' \
             --cmd 'python3 test/hygiene/check_sizes.py --self-test'
endif
