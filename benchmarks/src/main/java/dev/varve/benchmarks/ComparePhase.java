package dev.varve.benchmarks;

/**
 * One measured load of the comparison harness, after IEP-113's experiments: full-speed puts over a key range, puts at a
 * fixed rate (latency without coordinated omission: each write's latency counts from when it was due), and a
 * disk-heavy load of unique (monotonically increasing) keys, each as single puts or as batches.
 */
enum ComparePhase {
    FULL_SPEED(Load.RANDOM, false, false, "full-speed puts"),
    FULL_SPEED_BATCH(Load.RANDOM, true, false, "full-speed batches"),
    FIXED_RATE(Load.RANDOM, false, true, "fixed-rate puts"),
    FIXED_RATE_BATCH(Load.RANDOM, true, true, "fixed-rate batches"),
    UNIQUE(Load.UNIQUE, false, false, "unique-key puts (disk-heavy)"),
    UNIQUE_BATCH(Load.UNIQUE, true, false, "unique-key batches (disk-heavy)");

    /** Which keys a phase writes. */
    enum Load {
        /** Uniformly random ids in {@code [0, keys)}: inserts first, then more and more overwrites. */
        RANDOM,
        /** Consecutive ids, never repeated: every put lands on a new or the right-most leaf page. */
        UNIQUE
    }

    final Load load;
    final boolean batch;
    final boolean fixedRate;
    final String title;

    ComparePhase(Load load, boolean batch, boolean fixedRate, String title) {
        this.load = load;
        this.batch = batch;
        this.fixedRate = fixedRate;
        this.title = title;
    }

    /** The phases of the default (about 3-minute) comparison. */
    static final ComparePhase[] DEFAULT = {FULL_SPEED, FULL_SPEED_BATCH, FIXED_RATE, UNIQUE};
}
