/*
 * SPIN model of restartable_sequences() on x86_64: the user-space sequence
 * of six steps and the kernel's abort rule, checked exhaustively by
 * scripts/model-check (spin -a, gcc -DSAFETY, pan without bitstate).
 *
 * Modeled
 *   - Two user threads, each with its own registered words: ctr[t] (the
 *     kernel's *counter, event count * NCPU + cpu) and pcm[t] (the
 *     *post_commit word).
 *   - Per-CPU data: cnt[cpu], a word that sequences increment (load in
 *     step 5, commit store of value + 1), and a singly linked list
 *     head[cpu] / nxt[node] of NN nodes, all on CPU 0's list at first.
 *     Each thread runs NITER rounds of: increment; pop a node; push it
 *     back (push: nxt[node] = head, a private store, then the commit store
 *     head = node). An empty list ends a pop without a commit.
 *   - Code addresses: every instruction has one (pc[]). The rule compares
 *     them with pcm[t], so the layout is the real one: step 1 through the
 *     commit lie below the sequence's post-commit label, step 6 is at it,
 *     the abort paths above it; the out-of-line "step 4 failed" stubs sit
 *     below it (.text.unlikely, as in the selftests' template). The signal
 *     handler's code lies below all of the main code, so a stale *post_commit
 *     left by the main code would send the handler to the main sequence's
 *     abort address.
 *   - Scheduling: NCPU = 2 CPUs, both threads start on CPU 0. A thread runs
 *     user code only while it is cur[] of its CPU, one instruction per
 *     atomic step, so on CPU 0 the threads interleave only through events,
 *     and after a migration they run truly in parallel. Events (at most
 *     MAXEV in all) can hit the running thread between any two of its
 *     instructions:
 *       preempt  scheduled out; the other thread runs if it is on this CPU;
 *       migrate  moved to the other CPU (it waits there if that CPU is busy);
 *       signal   a handler frame is pushed (at most MAXDEPTH levels) and
 *                runs its own increment sequence on the same words, then
 *                sigreturn pops the frame.
 *     Each applies the kernel rule (rule() below) to the interrupted frame
 *     and rewrites ctr[t] with the new count and CPU. The rule is applied
 *     when the event happens rather than on the return to user space: the
 *     thread's own IP and words cannot change in between.
 *
 * Abstracted away
 *   Real addresses (pc values are small integers in layout order), the
 *   32-bit split of *counter (event count * NCPU + cpu here), system calls
 *   inside a sequence (SIGSEGV in the patch), faults on the registered
 *   words, rseq() interplay, KVM, more than two CPUs and threads, and memory
 *   ordering (a thread only ever races with itself on its own CPU; on two
 *   CPUs the data is per CPU, so a correct thread touches only its own
 *   CPU's data, and the model has sequential consistency).
 *
 * Properties
 *   - Handler entry: assert(pcm[t] == 0) at the handler's first instruction.
 *   - End state (check process, once both threads are done): the per-CPU
 *     counters sum to the number of increments that reached their step 6
 *     (ghost, counted there), so no lost and no doubled update; each thread
 *     finished its NITER rounds (else: invalid end state); walking both lists
 *     (at most NN + 1 steps each) meets every node exactly once and no
 *     thread still holds one.
 *
 * Variants (spin -D...), each of which must fail:
 *   NO_CHECK     step 4 omitted
 *   CHECK_FIRST  steps 3 and 4 swapped: the counter check before publishing
 *   NO_CLEAR     the kernel redirects IP but never clears *post_commit
 *   LE_RULE      the kernel aborts also at IP == *post_commit
 * Bounds: NITER (rounds per thread), MAXEV (events in all), MAXDEPTH
 * (nested signal handlers); ONE_CPU disables migration.
 *
 * Why two CPUs: the required setting is two threads on one CPU, and both
 * threads start there, but with ONE_CPU the NO_CHECK and CHECK_FIRST
 * variants verify clean (errors: 0). That is right, not a model gap: on
 * one CPU the CPU field read in step 1 never goes stale, and every load of
 * the work comes after step 3, where the kernel rule protects it, so step 4
 * has nothing to catch. Step 4 exists for an event between steps 1 and 3
 * that moves the thread to another CPU: the sequence would then work on
 * the old CPU's data while the thread now running there does too. So the
 * default model lets either thread migrate (as one of the MAXEV events);
 * every one-CPU run is still among its runs.
 */

#ifndef NITER
#define NITER	1
#endif
#ifndef MAXEV
#define MAXEV	3
#endif
#ifndef MAXDEPTH
#define MAXDEPTH 1
#endif

#define NT	2		/* threads */
#define NCPU	2
#define NN	3		/* list nodes */
#define NIL	NN
#define NONE	NT		/* cur[] of an idle CPU */
#define NFR	(MAXDEPTH + 1)	/* frames per thread: main + handlers */

#ifdef LE_RULE
#define BELOW(ip, pc)	((ip) <= (pc))
#else
#define BELOW(ip, pc)	((ip) < (pc))
#endif

/*
 * Code layout. A sequence at base B: step 1 at B, step 2 at B+1, steps 3
 * and 4 at B+2 and B+3 (swapped with CHECK_FIRST), its work from B+4 up to
 * the commit, step 6 at the label L, the abort path at L+1 (retry: back to
 * step 1). The "step 4 failed" stubs (*post_commit = 0; goto abort) are
 * below everything else.
 */
#define H_F	1		/* stub of the handler's increment */
#define I_F	2		/* stub of the main increment */
#define P_F	3		/* stub of pop */
#define U_F	4		/* stub of push */

#define H_ENTRY	10		/* handler: entry, then an increment */
#define H_B	11
#define H_L	17		/* B+4 load, B+5 commit, B+6 label */
#define H_AB	18
#define H_RET	19		/* sigreturn */

#define M_TOP	30		/* main loop */
#define I_B	31		/* increment */
#define I_L	37
#define I_AB	38
#define P_B	40		/* pop: B+4 load head, B+5 load next, B+6 commit */
#define P_L	47
#define P_AB	48
#define U_B	50		/* push: B+4 load head, B+5 private store, B+6 commit */
#define U_L	57
#define U_AB	58

/* per-CPU data */
byte cnt[NCPU];
byte head[NCPU];
byte nxt[NN];

/* per thread: registered words, kernel state, scheduling */
byte ctr[NT];		/* *counter */
byte pcm[NT];		/* *post_commit */
byte evc[NT];		/* event count */
byte cpu[NT];
byte depth[NT];		/* nested handlers */
byte held[NT] = NIL;	/* node between pop and push */
byte iter[NT];
bool done[NT];
byte cur[NCPU] = NONE;	/* running thread of each CPU, or NONE */
byte budget = MAXEV;

/* per frame (t * NFR + depth): registers */
byte pc[NT * NFR];
byte rcx[NT * NFR];
byte st[NT * NFR];	/* start: step 1's counter */
byte rv[NT * NFR];	/* loaded value / head */
byte rn[NT * NFR];	/* loaded next */

byte ghost;		/* increments that reached their step 6 */

#define F	(t * NFR + depth[t])
#define OTHER	(1 - t)
#define DCPU	(st[F] % NCPU)	/* the data's CPU: start & cpu mask */

/*
 * The kernel rule for frame f of thread t after an event, then the counter
 * rewrite (with the thread's CPU after the event).
 */
inline rule(f)
{
	if
	:: pcm[t] != 0 ->
		if
		:: BELOW(pc[f], pcm[t]) ->
			printf("  kernel: t%d ip %d vs *post_commit %d: abort to %d\n",
			       t, pc[f], pcm[t], rcx[f]);
			pc[f] = rcx[f]
		:: else ->
			printf("  kernel: t%d ip %d vs *post_commit %d: no abort\n",
			       t, pc[f], pcm[t])
		fi;
#ifndef NO_CLEAR
		pcm[t] = 0
#else
		skip
#endif
	:: else -> skip
	fi;
	evc[t]++;
	ctr[t] = evc[t] * NCPU + cpu[t]
}

/* the thread to run on CPU c next: the other one if it is there and not done */
inline pass_cpu(c, self)
{
	if
	:: cpu[OTHER] == c && !done[OTHER] -> cur[c] = OTHER
	:: else -> cur[c] = self
	fi
}

/* clear dead registers of the current frame: fewer states */
inline dead()
{
	st[F] = 0; rv[F] = 0; rn[F] = 0
}

/* Steps 1 to 4 of a sequence at base B with label L and stub S. */
#ifdef CHECK_FIRST
#define STEP3(B)	(B + 3)
#define STEP4(B)	(B + 2)
#else
#define STEP3(B)	(B + 2)
#define STEP4(B)	(B + 3)
#endif

#define PROLOGUE(B, L, S)						\
	:: pc[F] == B -> st[F] = ctr[t]; pc[F] = B + 1			\
	:: pc[F] == B + 1 -> rcx[F] = L + 1; pc[F] = B + 2		\
	:: pc[F] == STEP3(B) -> pcm[t] = L; pc[F] = STEP3(B) + 1	\
	:: pc[F] == STEP4(B) ->						\
		if							\
		:: CHECKING && ctr[t] != st[F] ->			\
			printf("t%d step 4: counter changed\n", t);	\
			pc[F] = S					\
		:: else -> pc[F] = STEP4(B) + 1				\
		fi							\
	:: pc[F] == S -> pcm[t] = 0; pc[F] = L + 1			\
	:: pc[F] == L + 1 -> dead(); pc[F] = B

#ifdef NO_CHECK
#define CHECKING	false
#else
#define CHECKING	true
#endif

/* One user instruction of thread t, in its current frame. */
inline step()
{
	if
	/* signal handler */
	:: pc[F] == H_ENTRY ->
		printf("t%d handler entry, *post_commit %d\n", t, pcm[t]);
		assert(pcm[t] == 0);	/* handler_entry_post_commit_clear */
		pc[F] = H_B
	PROLOGUE(H_B, H_L, H_F)
	:: pc[F] == H_B + 4 -> rv[F] = cnt[DCPU]; pc[F] = H_B + 5
	:: pc[F] == H_B + 5 ->	/* commit */
		printf("t%d commit cnt[%d] = %d\n", t, DCPU, rv[F] + 1);
		cnt[DCPU] = rv[F] + 1; pc[F] = H_L
	:: pc[F] == H_L -> pcm[t] = 0; ghost++; dead(); pc[F] = H_RET
	:: pc[F] == H_RET ->
		pc[F] = 0; rcx[F] = 0;
		depth[t]--

	/* main loop */
	:: pc[F] == M_TOP ->
		if
		:: iter[t] < NITER -> pc[F] = I_B
		:: else ->
			pc[F] = 0; rcx[F] = 0;
			done[t] = true;
			if
			:: cpu[OTHER] == cpu[t] && !done[OTHER] ->
				cur[cpu[t]] = OTHER
			:: else -> cur[cpu[t]] = NONE
			fi
		fi

	/* increment */
	PROLOGUE(I_B, I_L, I_F)
	:: pc[F] == I_B + 4 -> rv[F] = cnt[DCPU]; pc[F] = I_B + 5
	:: pc[F] == I_B + 5 ->	/* commit */
		printf("t%d commit cnt[%d] = %d\n", t, DCPU, rv[F] + 1);
		cnt[DCPU] = rv[F] + 1; pc[F] = I_L
	:: pc[F] == I_L -> pcm[t] = 0; ghost++; dead(); pc[F] = P_B

	/* pop */
	PROLOGUE(P_B, P_L, P_F)
	:: pc[F] == P_B + 4 -> rv[F] = head[DCPU]; pc[F] = P_B + 5
	:: pc[F] == P_B + 5 ->
		if
		:: rv[F] == NIL -> pc[F] = P_L	/* empty: no commit */
		:: else -> rn[F] = nxt[rv[F]]; pc[F] = P_B + 6
		fi
	:: pc[F] == P_B + 6 ->	/* commit */
		printf("t%d commit pop node %d, head[%d] = %d\n", t, rv[F], DCPU, rn[F]);
		head[DCPU] = rn[F]; pc[F] = P_L
	:: pc[F] == P_L ->
		pcm[t] = 0;
		held[t] = rv[F];
		dead();
		if
		:: held[t] != NIL -> pc[F] = U_B
		:: else -> iter[t]++; pc[F] = M_TOP
		fi

	/* push */
	PROLOGUE(U_B, U_L, U_F)
	:: pc[F] == U_B + 4 -> rv[F] = head[DCPU]; pc[F] = U_B + 5
	:: pc[F] == U_B + 5 -> nxt[held[t]] = rv[F]; pc[F] = U_B + 6
	:: pc[F] == U_B + 6 ->	/* commit */
		printf("t%d commit push node %d on cpu %d\n", t, held[t], DCPU);
		head[DCPU] = held[t]; pc[F] = U_L
	:: pc[F] == U_L ->
		pcm[t] = 0; held[t] = NIL; dead();
		iter[t]++; pc[F] = M_TOP

	/* no instruction at this address: a hole in the model itself */
	:: else -> assert(false)	/* model_pc_valid */
	fi
}

proctype thread(byte t)
{
	byte c;

	do
	:: atomic { !done[t] && cur[cpu[t]] == t -> step() }
	:: atomic { !done[t] && cur[cpu[t]] == t && budget > 0 ->
		/* preempt: the other thread runs if it waits on this CPU */
		printf("t%d preempted at ip %d\n", t, pc[F]);
		budget--;
		rule(F);
		pass_cpu(cpu[t], t)
	   }
#ifndef ONE_CPU
	:: atomic { !done[t] && cur[cpu[t]] == t && budget > 0 ->
		/* migrate to the other CPU */
		printf("t%d migrated to cpu %d at ip %d\n", t, 1 - cpu[t], pc[F]);
		budget--;
		c = cpu[t];
		cpu[t] = 1 - c;
		rule(F);
		if
		:: cpu[OTHER] == c && !done[OTHER] -> cur[c] = OTHER
		:: else -> cur[c] = NONE
		fi;
		if
		:: cur[cpu[t]] == NONE -> cur[cpu[t]] = t
		:: else -> skip		/* waits for the other thread */
		fi;
		c = 0
	   }
#endif
	:: atomic { !done[t] && cur[cpu[t]] == t && budget > 0 &&
		    depth[t] < MAXDEPTH ->
		/* signal: the rule on the interrupted frame, then the handler */
		printf("t%d signal at ip %d\n", t, pc[F]);
		budget--;
		rule(F);
		depth[t]++;
		rcx[F] = rcx[F - 1];	/* registers are inherited */
		pc[F] = H_ENTRY
	   }
	:: atomic { !done[t] && cur[cpu[t]] == NONE -> cur[cpu[t]] = t }
	:: done[t] -> break
	od
}

/* Set up, start the threads, and check the end state once both are done. */
init
{
	byte c, n, k;
	byte seen[NN];

	atomic {
		head[0] = 0; nxt[0] = 1; nxt[1] = 2; nxt[2] = NIL;
		head[1] = NIL;
		pc[0 * NFR] = M_TOP;
		pc[1 * NFR] = M_TOP;
		run thread(0);
		run thread(1)
	}
	atomic {
		done[0] && done[1] ->
		/* no lost or doubled update */
		assert(cnt[0] + cnt[1] == ghost);	/* counter_matches_commits */
		assert(held[0] == NIL && held[1] == NIL);
		/* every node exactly once on the lists */
		c = 0;
		do
		:: c < NCPU ->
			n = head[c]; k = 0;
			do
			:: n != NIL && k <= NN -> seen[n]++; n = nxt[n]; k++
			:: else -> break
			od;
			c++
		:: else -> break
		od;
		n = 0;
		do
		:: n < NN -> assert(seen[n] == 1); n++	/* list_node_once */
		:: else -> break
		od
	}
}
