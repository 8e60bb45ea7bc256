package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.UnforcedFileIOFactory;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

/**
 * The workload that builds the corruption sweep's store images: step {@code i} is a pure function of {@code i} and
 * of the model's state before it (which snapshot a rank change raises), so a parent can rebuild the model of any
 * acknowledged prefix. The steps write three tables (puts, removes, atomic batches, values up to 6 KiB so some
 * take overflow pages), declare snapshots of ranks 1 to 3 under keepLast rules at every level, raise older
 * snapshots' ranks once they left a small hybrid page window (so checkpoints copy them into ranked extents), and
 * checkpoint. Run as a child JVM ({@link #main}) it runs steps until it is killed -9, acknowledging each one.
 */
final class SweepWorkload {
    static final String[] TABLES = {"alpha", "beta", "gamma"};
    static final int KEYS = 200;
    static final int WINDOW = 2;
    static final List<Retention> LEVELS = List.of(Retention.keepLast(5), Retention.keepLast(3), Retention.keepLast(2));
    /** Steps of a built image: the last one is a checkpoint, so ranked extents of the latest raises exist. */
    static final int IMAGE_STEPS = 320;
    private static final long SEED = 15;

    enum Kind { WRITE, SNAPSHOT, RANK, CHECKPOINT }

    /** One change of a write; {@code value == null} removes. */
    record Change(String table, String key, byte[] value) {
    }

    /** One step: a write (one change, or an atomic batch), a declaration of rank {@code rank}, a raise, a checkpoint. */
    record Step(Kind kind, List<Change> changes, int rank, long target) {
        @Override
        public String toString() {
            return switch (kind) {
                case WRITE -> "write of " + changes.size() + " change(s)";
                case SNAPSHOT -> "snapshotNow(" + rank + ")";
                case RANK -> "rank(" + target + ", " + rank + ")";
                case CHECKPOINT -> "checkpoint";
            };
        }
    }

    private SweepWorkload() {
    }

    static VarveConfig config(Path dir, RecoveryMode mode) {
        return VarveConfig.builder().path(dir).pageSize(4096).dataRegionSize(16L << 20).partitions(2).recoveryMode(mode)
                .recoveryCompression(mode == RecoveryMode.CHECKPOINT_RECOVERY_FILE ? RecoveryCompression.SNAPPY : RecoveryCompression.DISABLED)
                .walSyncMode(WalSyncMode.LOG_ONLY).walSegmentSize(4L << 20).checkpointFrequency(Duration.ofDays(1))
                .checkpointBufferSize(1L << 20).captureBufferSize(1L << 20).skippyNodeEntries(8).archiveSegmentSize(256L << 10)
                .snapshotPageWindow(WINDOW).retention(RankTreePolicy.levels(LEVELS.toArray(new Retention[0]))).build();
    }

    /** Step {@code i} given the model of steps [0, i). */
    static Step step(long i, SweepModel model) {
        Random r = new Random(SEED * 1_000_003L + i);
        if (i == 0) { // every table exists from the first step, so every snapshot sees all three
            List<Change> first = new ArrayList<>();
            for (String t : TABLES) first.add(new Change(t, key(0), value(r)));
            return new Step(Kind.WRITE, first, 0, 0);
        }
        // past the image's steps (a child about to be killed) checkpoints follow each other, so the kill lands in one
        if (i % 40 == 39 || (i > IMAGE_STEPS && i % 20 == 19)) return new Step(Kind.CHECKPOINT, List.of(), 0, 0);
        if (i % 9 == 8) {
            int p = r.nextInt(10);
            return new Step(Kind.SNAPSHOT, List.of(), p < 7 ? 1 : p < 9 ? 2 : 3, 0);
        }
        if (i % 31 == 30) {
            Long target = model.rankTarget(WINDOW);
            if (target != null) return new Step(Kind.RANK, List.of(), model.snapshots().get(target).rank + 1, target);
        }
        int n = r.nextInt(4) == 0 ? 2 + r.nextInt(4) : 1;
        List<Change> changes = new ArrayList<>(n);
        for (int j = 0; j < n; j++) {
            String t = TABLES[r.nextInt(TABLES.length)];
            String k = key(r.nextInt(KEYS));
            changes.add(new Change(t, k, r.nextInt(6) == 0 ? null : value(r)));
        }
        return new Step(Kind.WRITE, changes, 0, 0);
    }

    static String key(int k) {
        return String.format("k%04d", k);
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] value(Random r) {
        byte[] v = new byte[r.nextInt(10) == 0 ? 1024 + r.nextInt(5 * 1024) : 1 + r.nextInt(300)];
        r.nextBytes(v);
        return v;
    }

    /**
     * Runs {@code step} against the store; returns the id of a declared snapshot, else 0. A checkpoint is joined
     * when {@code joinCheckpoints}, else only requested, after the previous one completed ({@code previous}).
     */
    static long run(Varve store, Step step, boolean joinCheckpoints, CompletableFuture<?>[] previous) {
        switch (step.kind()) {
            case WRITE -> {
                if (step.changes().size() == 1) {
                    Change c = step.changes().get(0);
                    if (c.value() == null) store.table(c.table()).remove(utf8(c.key()));
                    else store.table(c.table()).put(utf8(c.key()), c.value());
                } else {
                    store.write(b -> {
                        for (Change c : step.changes()) {
                            if (c.value() == null) b.remove(c.table(), utf8(c.key()));
                            else b.put(c.table(), utf8(c.key()), c.value());
                        }
                    });
                }
                return 0;
            }
            case SNAPSHOT -> {
                return store.snapshotNow(step.rank());
            }
            case RANK -> {
                store.rank(step.target(), step.rank());
                return 0;
            }
            case CHECKPOINT -> {
                if (previous[0] != null) previous[0].join();
                previous[0] = store.checkpoint();
                if (joinCheckpoints) previous[0].join();
                return 0;
            }
            default -> throw new AssertionError(step.kind());
        }
    }

    /**
     * The snapshot id a declaration returns: ids increase by one from 1, dropped ones included, so the parent can
     * replay a killed child's acknowledged steps; the child and the clean build check every id against it.
     */
    static long expectedId(SweepModel model) {
        return model.latestId() + 1;
    }

    /** Runs step {@code i} and records it in the model, checking a declaration's id. */
    static void runAndApply(Varve store, long i, SweepModel model, boolean joinCheckpoints, CompletableFuture<?>[] previous) {
        Step s = step(i, model);
        long id = run(store, s, joinCheckpoints, previous);
        if (s.kind() == Kind.SNAPSHOT && id != expectedId(model)) {
            throw new IllegalStateException("step " + i + ": snapshotNow returned " + id + ", the sweep's replay expects " + expectedId(model));
        }
        model.apply(s, id);
    }

    /** Builds a clean-close image in this JVM: {@link #IMAGE_STEPS} steps, then close. Returns the model. */
    static SweepModel buildClean(Path dir, RecoveryMode mode) {
        SweepModel model = new SweepModel(LEVELS);
        CompletableFuture<?>[] previous = new CompletableFuture<?>[1];
        try (Varve store = Varve.open(config(dir, mode), UnforcedFileIOFactory.INSTANCE)) {
            for (long i = 0; i < IMAGE_STEPS; i++) runAndApply(store, i, model, true, previous);
        }
        return model;
    }

    /** The model of the first {@code steps} steps, as a killed child ran them. */
    static SweepModel replay(long steps) {
        SweepModel model = new SweepModel(LEVELS);
        for (long i = 0; i < steps; i++) {
            Step s = step(i, model);
            model.apply(s, s.kind() == Kind.SNAPSHOT ? expectedId(model) : 0);
        }
        return model;
    }

    /**
     * Child JVM, {@code main(dir, mode, threshold, ackFile)} as {@link FixtureChildJvm#killWhen} starts it (the
     * threshold is the parent's): runs steps until killed, appending each acknowledged step's number to the ack file
     * in {@link KillWorkload#acknowledged}'s format. Past the image's steps it pauses 1 ms per step and checkpoints
     * every 20 steps without waiting, so a checkpoint is running a good part of the time before the kill.
     */
    public static void main(String[] args) throws IOException, InterruptedException {
        Path dir = Path.of(args[0]);
        RecoveryMode mode = RecoveryMode.valueOf(args[1]);
        SweepModel model = new SweepModel(LEVELS);
        CompletableFuture<?>[] previous = new CompletableFuture<?>[1];
        try (Varve store = Varve.open(config(dir, mode), UnforcedFileIOFactory.INSTANCE); FileOutputStream ack = new FileOutputStream(args[3], true)) {
            for (long i = 0; ; i++) {
                runAndApply(store, i, model, false, previous);
                ack.write((i + "\n").getBytes(StandardCharsets.UTF_8));
                if (i >= IMAGE_STEPS) Thread.sleep(1);
            }
        }
    }
}
