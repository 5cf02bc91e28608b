# Front door of the restartable_sequences() patch series and its harness.
# Everything is done by the small scripts in scripts/; see README.md.
# BASE (make run BASE=6.12 or BASE=6.12 make run) reaches the scripts
# through the environment: make exports command-line variables to recipes.

DURATION ?= 600
CALLS ?= 1000000

.PHONY: run test test-debug test-without-option shell exec bench pahole stress fuzz mutants model-check lib-check check-series checkpatch bot-checks outgoing regression harness-selftests tree export clean help

help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

## Two bases, two series: BASE=7.3 (the default) works on patches/mainline-7.3
## in build/7.3/, BASE=6.12 on the backport, patches/backport-6.12, in
## build/6.12/; every target but test takes it (make run BASE=6.12).

## ARCH=arm64 (make run ARCH=arm64, also for shell and exec, mainline only)
## cross-builds an arm64 kernel and boots QEMU's virt machine instead.

## run           build the patched kernel, boot it in QEMU (4 vCPUs), run the guest tests
run:
	@scripts/run test

## test          everything CI checks, one verdict: on 7.3 the host checks below, the mutant subset,
##               the debug lane, the arm64 guest and run; on 6.12 the kernel build and the guest tests
test:
	@scripts/test

## test-debug    the debug lane alone: configs/debug (KASAN, UBSAN, lockdep, ...), guest/lists/debug
test-debug:
	@DEBUG=1 scripts/run test

## test-without-option  the series built without CONFIG_RESTARTABLE_SEQUENCES (configs/without-option), guest/lists/without-option
test-without-option:
	@WITHOUT_OPTION=1 scripts/run test

## shell         boot the patched kernel with a shell on the serial console
shell:
	@scripts/run shell

## exec          run CMD in the guest with FILES copied to /mnt: make exec CMD='./prog' FILES='prog'
exec:
	@scripts/run exec

## bench         benchmarks on the patched and base kernels and on the host: table, build/BASE/bench.json, .png
bench:
	@scripts/bench

## pahole        struct task_struct and struct rseq_event without and with the series (pahole, debug info)
pahole:
	@scripts/pahole

## stress        soak test in the guest for DURATION seconds (default 600)
stress:
	@BOOT_TIMEOUT=$$(($(DURATION) + 600)) \
		CMD='/tests/bin/restartable_seq_stress $(DURATION)' scripts/run exec

## fuzz          CALLS random registrations (default 1000000) and 2000 abort cases, then the ABI tests
fuzz:
	@BOOT_TIMEOUT=1800 \
		CMD='/tests/bin/restartable_seq_fuzz $(CALLS) 2000 && cd /tests/rseq && ./restartable_seq_abi_test' \
		scripts/run exec

## mutants       the whole mutation lane: every tests/mutants/*.patch must make a test fail
mutants:
	@scripts/mutants

## model-check   the Promela model of the protocol (spin): holds, and its broken variants fail
model-check:
	@scripts/model-check

## lib-check     librestartable/ on the host: build, make install, a pkg-config example, its TAP tests
lib-check:
	@scripts/lib-check

## check-series  build after each patch of the series (bisectability), and with the feature off
check-series:
	@scripts/check-series

## checkpatch    scripts/checkpatch.pl --strict over every patch
checkpatch:
	@scripts/checkpatch

## bot-checks    sparse, W=1, clang, i386, arm64, kernel-doc, Sphinx, selftests for arm64 and -m32
bot-checks:
	@scripts/bot-checks

## outgoing      build/BASE/outgoing/: the series ready to mail, From/Signed-off-by of your git identity
outgoing:
	@scripts/outgoing

## regression    guest/lists/regression on the base and the patched kernel: same results
regression:
	@scripts/regression

## harness-selftests  the harness's own tests (verdict on recorded logs, tree/export round trip of each base)
harness-selftests:
	@scripts/harness-selftests

## tree          make build/BASE/linux: the base tree (7.3: fetched to build/src) plus one commit per patch
tree:
	@scripts/deps
	@scripts/tree

## export        write the commits of build/BASE/linux back to the base's series in patches/
export:
	@scripts/export

## clean         remove build/ (every base's tree: export your work first; the 7.3 source)
clean:
	rm -rf build
