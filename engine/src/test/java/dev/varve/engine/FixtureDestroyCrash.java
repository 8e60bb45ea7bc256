package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.core.io.UnforcedFileIOFactory;

import java.nio.file.Path;
import java.util.Random;
import java.util.TreeMap;

import static dev.varve.engine.FixtureSupport.utf8;

/**
 * Child JVM of {@link PartitionDestroyCrashTest}: the way a grid uses partitions as segments — fill them, destroy the
 * ones it gives up, fill some of them again, with checkpoints (timed and forced) and snapshots at random moments in
 * between — then says so and waits for its kill -9. {@link #model} computes, without a store, what it acknowledged.
 */
public final class FixtureDestroyCrash {
    static final int PARTS = 32;
    static final int ROUNDS = 12;
    static final TableOptions CALLER = TableOptions.callerPlaced(PARTS);

    private FixtureDestroyCrash() {
    }

    /** What every partition holds once all the rounds of {@code seed} are acknowledged. */
    static TreeMap<String, String>[] model(long seed) {
        return play(seed, null);
    }

    @SuppressWarnings({"unchecked", "rawtypes"}) // Java has no generic array creation
    private static TreeMap<String, String>[] play(long seed, Varve store) {
        TreeMap<String, String>[] model = new TreeMap[PARTS];
        for (int p = 0; p < PARTS; p++) model[p] = new TreeMap<>();
        Random rnd = new Random(seed);
        Table t = store == null ? null : store.table("grid", CALLER);
        for (int r = 0; r < ROUNDS; r++) {
            for (int p = 0; p < PARTS; p++) {
                int action = rnd.nextInt(4);
                if (action == 0) {
                    if (t != null) t.partition(p).destroy();
                    model[p].clear();
                } else {
                    int n = 20 + rnd.nextInt(200);
                    for (int i = 0; i < n; i++) {
                        String k = "k" + rnd.nextInt(400);
                        String v = "r" + r + "-p" + p + "-" + i + "-" + "x".repeat(rnd.nextInt(300));
                        if (t != null) t.partition(p).put(utf8(k), utf8(v));
                        model[p].put(k, v);
                    }
                }
            }
            int between = rnd.nextInt(4);
            if (store != null && between == 0) store.checkpoint().join();
            if (store != null && between == 1) store.snapshotNow();
        }
        return model;
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        RecoveryMode mode = RecoveryMode.valueOf(args[1]);
        long seed = Long.parseLong(args[2]);
        Varve store = Varve.open(FixtureSupport.small(dir).recoveryMode(mode).partitions(1)
                .checkpointFrequency(java.time.Duration.ofMillis(20 + seed % 50)).build(), UnforcedFileIOFactory.INSTANCE);
        play(seed, store);
        System.out.println("ACKED");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE); // the test kills this JVM with kill -9: the store is never closed
    }
}
