package dev.varve.engine;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Operators switch recoveryMode, recoveryCompression and walSyncMode between runs, and a run may end in kill -9.
 * Here every round's child JVM opens the store its predecessor left killed under another combination, so its own
 * recovery reads the other mode's files or records (recovery files, or physical WAL images, compressed as the old
 * setting said), and is itself killed: right after its open (while the checkpoint of the replayed pages runs in the
 * background, under the new mode), inside a checkpoint (a start marker without its end), or at a random moment.
 * Between rounds the store is read with {@link Varve#openReadOnly} under the next round's settings (recovered in
 * memory, nothing written): it holds exactly the acknowledged batches, plus at most the one in flight.
 */
@Timeout(600)
class ConfigSwitchKillTest {
    @TempDir
    Path tmp;

    /** The settings of successive runs: each differs from the one before in mode, compression and sync. */
    private static final Object[][] RUNS = {
            {RecoveryMode.CHECKPOINT_RECOVERY_FILE, RecoveryCompression.SNAPPY, WalSyncMode.LOG_ONLY},
            {RecoveryMode.WAL_PHYSICAL, RecoveryCompression.DISABLED, WalSyncMode.FSYNC},
            {RecoveryMode.CHECKPOINT_RECOVERY_FILE, RecoveryCompression.DISABLED, WalSyncMode.BACKGROUND},
            {RecoveryMode.WAL_PHYSICAL, RecoveryCompression.SNAPPY, WalSyncMode.LOG_ONLY},
            {RecoveryMode.CHECKPOINT_RECOVERY_FILE, RecoveryCompression.SKIP_GARBAGE, WalSyncMode.FSYNC},
            {RecoveryMode.WAL_PHYSICAL, RecoveryCompression.SKIP_GARBAGE, WalSyncMode.BACKGROUND},
            {RecoveryMode.CHECKPOINT_RECOVERY_FILE, RecoveryCompression.SNAPPY, WalSyncMode.FSYNC},
    };

    @Test
    void eachRunRecoversWhatTheRunBeforeItLeftUnderOtherSettings() throws Exception {
        long seed = Long.getLong("varve.seed", System.nanoTime());
        Random rnd = new Random(seed);
        Path dir = tmp.resolve("store");
        Path ack = tmp.resolve("ack");
        Path log = tmp.resolve("child.log");
        long applied = 0;
        int midCheckpoint = 0;
        for (int round = 0; round < RUNS.length * 2 - 1; round++) {
            Object[] run = RUNS[round % RUNS.length];
            RecoveryMode mode = (RecoveryMode) run[0];
            String where = "seed " + seed + " round " + round + " (" + mode + ", " + run[1] + ", " + run[2] + ")";
            int how = round % 3;
            long[] notBefore = {0};
            long delayMillis = how == 2 ? 20 + rnd.nextInt(400) : how == 1 ? rnd.nextInt(100) : 0;
            BooleanSupplier when = () -> {
                if (notBefore[0] == 0) notBefore[0] = System.nanoTime() + delayMillis * 1_000_000;
                if (System.nanoTime() < notBefore[0]) return false;
                return how != 1 || unfinishedCheckpoint(dir) || System.nanoTime() > notBefore[0] + 5_000_000_000L;
            };
            long acked = FixtureChildJvm.killWhen(KillWorkload.class, dir, mode, applied, ack, log, when, where, run[2].toString(), run[1].toString());
            if (how == 1 && unfinishedCheckpoint(dir)) midCheckpoint++;
            assertTrue(acked > applied, where + ": the child acknowledged nothing:\n" + Files.readString(log));
            Object[] next = RUNS[(round + 1) % RUNS.length];
            VarveConfig reader = KillWorkload.config(dir, (RecoveryMode) next[0], (WalSyncMode) next[2], (RecoveryCompression) next[1]);
            try (Varve store = Varve.openReadOnly(reader)) {
                applied = KillWorkload.recoveredBatches(KillWorkload.NORMAL, store, acked, where + ", read as " + next[0] + "/" + next[1]);
            }
        }
        try (Varve store = Varve.open(KillWorkload.config(dir, RecoveryMode.WAL_PHYSICAL, WalSyncMode.LOG_ONLY, RecoveryCompression.DISABLED))) {
            assertNull(KillWorkload.diff(store, KillWorkload.model(applied)), "seed " + seed + ": after the last run");
        }
        assertTrue(midCheckpoint > 0, "seed " + seed + ": no kill landed inside a checkpoint");
        System.out.println("config switches under kill -9: " + applied + " batches, " + midCheckpoint + " kills inside a checkpoint, seed " + seed);
    }

    /** A start marker without its end marker: the kill landed inside a checkpoint. */
    private static boolean unfinishedCheckpoint(Path store) {
        Path cps = store.resolve("checkpoints");
        try (Stream<Path> s = Files.list(cps)) {
            return s.map(p -> p.getFileName().toString()).anyMatch(n -> n.endsWith("-start.bin") && !Files.exists(cps.resolve(n.replace("-start.bin", "-end.bin"))));
        } catch (IOException e) {
            return false; // not there yet, or a file went while listing
        }
    }
}
