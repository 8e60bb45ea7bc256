package dev.varve.benchmarks;

import dev.varve.config.WalSyncMode;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One measured load of the comparison harness, after IEP-113's experiments: full-speed puts over a key range, puts at a
 * fixed rate (latency without coordinated omission: each write's latency counts from when it was due), and a
 * disk-heavy load of unique (monotonically increasing) keys, each as single puts or as batches; and the scaling phases:
 * full-speed puts from 1, 2, 4 and 8 writer threads (each Varve writer on its own partition), and 8 writers that each
 * wait for fsync (group commit), whatever the run's sync mode; and random gets from 1 and 2 threads over every key of
 * the range, preloaded.
 */
enum ComparePhase {
    FULL_SPEED(Load.RANDOM, false, false, "full-speed puts"),
    FULL_SPEED_BATCH(Load.RANDOM, true, false, "full-speed batches"),
    FIXED_RATE(Load.RANDOM, false, true, "fixed-rate puts"),
    FIXED_RATE_BATCH(Load.RANDOM, true, true, "fixed-rate batches"),
    UNIQUE(Load.UNIQUE, false, false, "unique-key puts (disk-heavy)"),
    UNIQUE_BATCH(Load.UNIQUE, true, false, "unique-key batches (disk-heavy)"),
    WRITERS_1(1, null, "full-speed puts, 1 writer"),
    WRITERS_2(2, null, "full-speed puts, 2 writers"),
    WRITERS_4(4, null, "full-speed puts, 4 writers"),
    WRITERS_8(8, null, "full-speed puts, 8 writers"),
    FSYNC_WRITERS_8(8, WalSyncMode.FSYNC, "FSYNC puts, 8 writers (group commit)"),
    GETS_1(1, "random gets over the preloaded keys, 1 thread"),
    GETS_2(2, "random gets over the preloaded keys, 2 threads");

    /** Bytes of every value a gets phase preloads (the size {@link PutGetBenchmark} uses): the keys stay resident. */
    static final int GET_VALUE_BYTES = 100;

    /** Which keys a phase writes. */
    enum Load {
        /** Uniformly random ids in {@code [0, keys)}: inserts first, then more and more overwrites. */
        RANDOM,
        /** Consecutive ids, never repeated: every put lands on a new or the right-most leaf page. */
        UNIQUE,
        /**
         * Gets of uniformly random ids in {@code [0, keys)}, after every id was put (in id order, batches of
         * {@link CompareChild#PRELOAD_BATCH}, {@value #GET_VALUE_BYTES}-byte values) and the store settled.
         */
        GETS
    }

    final Load load;
    final boolean batch;
    final boolean fixedRate;
    final String title;
    /** Writer threads; 0: the run's {@code --threads}. */
    final int writers;
    /** True when each Varve writer puts into a partition of its own (a caller-placed table), so writers never share one. */
    final boolean ownPartitions;
    /** The durability this phase always runs with; null: the run's sync mode. */
    final WalSyncMode sync;

    ComparePhase(Load load, boolean batch, boolean fixedRate, String title) {
        this.load = load;
        this.batch = batch;
        this.fixedRate = fixedRate;
        this.title = title;
        this.writers = 0;
        this.ownPartitions = false;
        this.sync = null;
    }

    /** A scaling phase: full-speed random puts from {@code writers} threads, each Varve writer on its own partition. */
    ComparePhase(int writers, WalSyncMode sync, String title) {
        this.load = Load.RANDOM;
        this.batch = false;
        this.fixedRate = false;
        this.title = title;
        this.writers = writers;
        this.ownPartitions = true;
        this.sync = sync;
    }

    /** A read phase: random gets from {@code threads} threads over a preloaded key range. */
    ComparePhase(int threads, String title) {
        this.load = Load.GETS;
        this.batch = false;
        this.fixedRate = false;
        this.title = title;
        this.writers = threads;
        this.ownPartitions = false;
        this.sync = null;
    }

    /** True for a phase that times gets rather than puts. */
    boolean reads() {
        return load == Load.GETS;
    }

    /** Writer threads of this phase in a run with {@code --threads runThreads}. */
    int writers(int runThreads) {
        return writers > 0 ? writers : runThreads;
    }

    /** The phases of the multi-writer scaling run ({@code --phases writers}). */
    static final ComparePhase[] WRITERS = {WRITERS_1, WRITERS_2, WRITERS_4, WRITERS_8};

    /**
     * The phases a {@code --phases} list names: phase names in any case with {@code -} or {@code _}, or {@code default},
     * {@code writers} (1, 2, 4, 8 writers), {@code gets} (1 and 2 threads), {@code all}; in the order given, each once.
     *
     * @throws IllegalArgumentException naming the first word that is not a phase, or when the list names none
     */
    static List<ComparePhase> parse(String list) {
        List<ComparePhase> out = new ArrayList<>();
        for (String word : list.split(",")) {
            String w = word.trim().toUpperCase(Locale.ROOT).replace('-', '_');
            List<ComparePhase> named = switch (w) {
                case "DEFAULT" -> List.of(DEFAULT);
                case "WRITERS" -> List.of(WRITERS);
                case "GETS" -> List.of(GETS_1, GETS_2);
                case "ALL" -> List.of(values());
                default -> {
                    try {
                        yield List.of(valueOf(w));
                    } catch (IllegalArgumentException e) {
                        throw new IllegalArgumentException("unknown phase '" + word.trim() + "'; phases: default, writers, gets, all, "
                                + String.join(", ", java.util.Arrays.stream(values()).map(p -> p.name().toLowerCase(Locale.ROOT)).toList()));
                    }
                }
            };
            for (ComparePhase p : named) if (!out.contains(p)) out.add(p);
        }
        if (out.isEmpty()) throw new IllegalArgumentException("names no phase: '" + list + "'"); // "," splits into no word
        return out;
    }

    /** The phases of the default (about 3-minute) comparison. */
    static final ComparePhase[] DEFAULT = {FULL_SPEED, FULL_SPEED_BATCH, FIXED_RATE, UNIQUE};
}
