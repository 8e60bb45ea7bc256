package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Real kill -9: a child JVM applies deterministic batches under load; it is killed (destroyForcibly) at a random
 * moment, the store is reopened in the other recovery mode, and must hold exactly the acknowledged batches, plus at
 * most the one in flight, all or nothing. A short run is in the default suite; {@code -Plong} runs hundreds.
 */
@Timeout(600)
class KillNineTest {
    @TempDir
    Path tmp;

    @Test
    void killedUnderLoadRecoversExactlyTheAcknowledgedBatches() throws Exception {
        run(Integer.getInteger("varve.killRounds", 6), Long.getLong("varve.seed", System.nanoTime()), WalSyncMode.LOG_ONLY);
    }

    /** The same under FSYNC, whose WAL stages its segment in the process: only what a commit forced survives the kill. */
    @Test
    void killedUnderLoadWithFsyncRecoversExactlyTheAcknowledgedBatches() throws Exception {
        run(Integer.getInteger("varve.killRounds", 4), Long.getLong("varve.seed", System.nanoTime()), WalSyncMode.FSYNC);
    }

    /** The same under BACKGROUND: the mapped WAL of LOG_ONLY plus a periodic fsync, so a killed process loses nothing acknowledged. */
    @Test
    void killedUnderLoadWithBackgroundSyncRecoversExactlyTheAcknowledgedBatches() throws Exception {
        run(Integer.getInteger("varve.killRounds", 2), Long.getLong("varve.seed", 23), WalSyncMode.BACKGROUND);
    }

    @Test
    @Tag("long")
    @Timeout(value = 4, unit = TimeUnit.HOURS)
    void hundredsOfKills() throws Exception {
        run(Integer.getInteger("varve.killRounds", 200), Long.getLong("varve.seed", System.nanoTime()), WalSyncMode.LOG_ONLY);
    }

    private void run(int rounds, long seed, WalSyncMode sync) throws Exception {
        Random rnd = new Random(seed);
        Path dir = tmp.resolve("store");
        Path ack = tmp.resolve("ack");
        Path log = tmp.resolve("child.log");
        long applied = 0;
        for (int round = 0; round < rounds; round++) {
            RecoveryMode mode = round % 2 == 0 ? RecoveryMode.CHECKPOINT_RECOVERY_FILE : RecoveryMode.WAL_PHYSICAL;
            RecoveryMode reopen = round % 2 == 0 ? RecoveryMode.WAL_PHYSICAL : RecoveryMode.CHECKPOINT_RECOVERY_FILE;
            long acked = FixtureChildJvm.killUnderLoad(KillWorkload.class, dir, mode, applied, ack, log, 50 + rnd.nextInt(700),
                    "seed " + seed + " round " + round, sync.name());
            assertTrue(acked > applied, "seed " + seed + " round " + round + ": child acknowledged nothing");
            try (Varve store = Varve.open(KillWorkload.config(dir, reopen))) {
                applied = KillWorkload.recoveredBatches(KillWorkload.NORMAL, store, acked, "seed " + seed + " round " + round + " (" + mode + " -> " + reopen + ")");
            }
        }
        System.out.println("kill -9 (" + sync + "): " + rounds + " rounds, " + applied + " batches, seed " + seed + ", all consistent");
    }
}
