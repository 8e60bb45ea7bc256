package dev.varve.benchmarks;

import dev.varve.engine.Varve;
import dev.varve.engine.WriteBatch;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * The writer of {@link SnapshotCostJob}: {@value #KEYS} resident keys, preloaded, then atomic batches of
 * {@value #BATCH} overwrites of distinct random keys from one thread, declaring snapshots as its
 * {@link SnapshotCadence} says. As in {@link SnapshotBenchmark#update}, batch slot {@code i} always puts the same
 * {@value #VALUE_BYTES}-byte value with byte 0 bumped once per batch, so no value is allocated while timed. A timed
 * cadence is checked between batches on the caller's clock reading: no second thread competes with the writer.
 *
 * <p>For checking what a view reads without copying values, the load keeps per key a token naming the put that wrote
 * its value ({@code batch * BATCH + slot}, or {@link #PRELOADED}), the tokens every key had at one marked declaration
 * (copied once), and an undo log of the tokens overwritten since the latest declaration (what turns the tokens of now
 * into those of that declaration).
 */
final class SnapshotCostLoad {
    static final String TABLE = "kv";
    static final int KEYS = 100_000;
    static final int VALUE_BYTES = 100;
    static final int BATCH = 10;
    /** Bytes a put changes: its key and its value. */
    static final int CHANGED_BYTES_PER_PUT = Keys.KEY_BYTES + VALUE_BYTES;
    /** The token of a key still holding its preloaded value, {@code Values.of(key)}. */
    static final long PRELOADED = -1;

    private final Varve store;
    private final SnapshotCadence cadence;
    private final int keys;
    private final SplittableRandom random;
    /** Slot i's value as first put; byte 0 of what batch n puts is {@code base[i][0] + n}. */
    private final byte[][] base = new byte[BATCH][];
    private final byte[][] values = new byte[BATCH][];
    private final int[] batchKeys = new int[BATCH];
    private final long[] tokens;
    private int[] undoKeys = new int[1024];
    private long[] undoTokens = new long[1024];
    private int undoSize;
    private long batches;
    private long declarations;
    private long lastDeclaredNanos;
    private long lastId = -1;
    private boolean markNext;
    private long markedId = -1;
    private long[] markedTokens;

    private SnapshotCostLoad(Varve store, SnapshotCadence cadence, int keys, long seed, long startNanos) {
        this.store = store;
        this.cadence = cadence;
        this.keys = keys;
        this.random = new SplittableRandom(seed);
        this.tokens = new long[keys];
        Arrays.fill(tokens, PRELOADED);
        for (int i = 0; i < BATCH; i++) {
            base[i] = Values.of(-1 - i, VALUE_BYTES);
            values[i] = base[i].clone();
        }
        this.lastDeclaredNanos = startNanos;
    }

    /** Puts every key of [0, {@code keys}) and returns the load; the caller checkpoints. */
    static SnapshotCostLoad preload(Varve store, SnapshotCadence cadence, int keys, long seed) {
        if (keys < BATCH) throw new IllegalArgumentException("a batch of " + BATCH + " distinct keys needs at least that many keys, was " + keys);
        Preload.keys(store, TABLE, keys, VALUE_BYTES, 0);
        return new SnapshotCostLoad(store, cadence, keys, seed, System.nanoTime());
    }

    /** One batch, then the declaration the cadence asks for; {@code nowNanos} is the caller's clock reading before it. */
    void step(long nowNanos) {
        int n = 0;
        while (n < BATCH) { // distinct keys, so a key's value never depends on the order inside a batch
            int k = random.nextInt(keys);
            boolean seen = false;
            for (int i = 0; i < n && !seen; i++) seen = batchKeys[i] == k;
            if (!seen) batchKeys[n++] = k;
        }
        for (byte[] v : values) v[0]++;
        Consumer<WriteBatch> batch = b -> {
            for (int i = 0; i < BATCH; i++) b.put(TABLE, Keys.of(batchKeys[i]), values[i]);
        };
        long id = -1;
        if (cadence == SnapshotCadence.EVERY_BATCH) id = writeThenSnapshot(batch);
        else store.write(batch);
        batches++;
        for (int i = 0; i < BATCH; i++) {
            int k = batchKeys[i];
            if (cadence != SnapshotCadence.NONE) logUndo(k, tokens[k]); // NONE never declares: nothing would clear the log
            tokens[k] = batches * BATCH + i;
        }
        if (cadence.timed() && nowNanos - lastDeclaredNanos >= cadence.intervalNanos) id = declare();
        if (id >= 0) declared(id, nowNanos);
    }

    /** "After every batch": the batch and the snapshot after it in one commit (one fsync under FSYNC). */
    private long writeThenSnapshot(Consumer<WriteBatch> batch) {
        return store.writeAndSnapshot(batch);
    }

    private long declare() {
        return store.snapshotNow();
    }

    private void declared(long id, long nowNanos) {
        declarations++;
        lastId = id;
        lastDeclaredNanos = nowNanos;
        undoSize = 0;
        if (markNext) {
            markNext = false;
            markedId = id;
            markedTokens = tokens.clone();
        }
    }

    private void logUndo(int key, long token) {
        if (undoSize == undoKeys.length) {
            undoKeys = Arrays.copyOf(undoKeys, undoSize * 2);
            undoTokens = Arrays.copyOf(undoTokens, undoSize * 2);
        }
        undoKeys[undoSize] = key;
        undoTokens[undoSize++] = token;
    }

    /** Keeps the tokens of the next snapshot declared: {@link #markedId()} and {@link #markedTokens()}. */
    void markNextDeclaration() {
        markNext = true;
    }

    /** The snapshot {@link #markNextDeclaration()} asked for; -1 until one was declared. */
    long markedId() {
        return markedId;
    }

    long[] markedTokens() {
        return markedTokens;
    }

    /** The latest snapshot declared; -1 before the first. */
    long lastId() {
        return lastId;
    }

    /** The token of every key as of the latest declaration: the tokens of now with the undo log rolled back. */
    long[] tokensAtLastDeclaration() {
        long[] t = tokens.clone();
        for (int i = undoSize - 1; i >= 0; i--) t[undoKeys[i]] = undoTokens[i];
        return t;
    }

    long[] tokensNow() {
        return tokens.clone();
    }

    /** Whether {@code actual} is the value the put named by {@code token} gave {@code key}. */
    boolean matches(byte[] actual, int key, long token) {
        if (token == PRELOADED) return Values.matches(actual, key, VALUE_BYTES);
        byte[] b = base[(int) (token % BATCH)];
        if (actual == null || actual.length != VALUE_BYTES || actual[0] != (byte) (b[0] + token / BATCH)) return false;
        return Arrays.equals(actual, 1, VALUE_BYTES, b, 1, VALUE_BYTES);
    }

    int keys() {
        return keys;
    }

    long batches() {
        return batches;
    }

    long declarations() {
        return declarations;
    }
}
