package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.varve.engine.FixtureSupport.awaitOlderThan;
import static dev.varve.engine.FixtureSupport.declaredMillis;
import static dev.varve.engine.FixtureSupport.ranksOf;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An acknowledged raise survives two crashes in a row, the first reopen's replay having checkpointed in its middle.
 * S (rank 1) is declared after the last checkpoint, then writes, then S2, whose declaration applies the policy, then
 * S is raised to rank 2; the store is killed. It reopens, once S is older than level 1's keepFor, with a data region
 * the writes do not fit in, so replay checkpoints before it reaches S2; the store is killed again before the reopen's
 * own checkpoint. That mark recorded the policy's clock at the reopen's time, past every record replayed: the second
 * replay, starting from it, checked keepFor at S2's declaration by that time and dropped S at its old rank before its
 * raise was replayed. A mark replay takes now records the time its records reached, and the second replay decides as
 * the first did. Agents are stepped by hand in the reopens: no archiver check, and the first reopen's own checkpoint,
 * which the background would run, never runs.
 */
@Timeout(180)
class RaiseAcrossReplayCheckpointTest {
    /**
     * Longer than the writes between S and S2 take on a busy machine (under a second on an idle one): S2's declaration
     * keeps S at level 1 before the crash, and so in a replay that decides as the live run did.
     */
    private static final Duration KEEP_FOR = Duration.ofSeconds(5);
    /** Batches of values a page each between S and S2: 2,560 pages, more than the small region's 2,048. */
    private static final int BATCHES = 40;
    private static final int PER_BATCH = 64;
    private static final long LARGE_REGION = 64L << 20;
    private static final long SMALL_REGION = 8L << 20;

    @TempDir
    Path dir;

    private VarveConfig config(long region) {
        return FixtureSupport.small(dir).name("raise-across-replay-checkpoint").dataRegionSize(region).checkpointDirtyRatio(0.95)
                .checkpointWalVolume(1L << 30).retention(RankTreePolicy.levels(Retention.keepFor(KEEP_FOR), Retention.keepAll())).build();
    }

    @Test
    void aRaiseAfterAMarkReplayTookSurvivesASecondCrash() throws InterruptedException {
        Varve s = Varve.open(config(LARGE_REGION));
        s.table("t");
        s.checkpoint().join(); // the mark both crashes' first replay starts from
        long snapshotS = s.snapshotNow();
        for (int b = 0; b < BATCHES; b++) {
            int batch = b;
            s.write(w -> {
                for (int i = 0; i < PER_BATCH; i++) w.put("t", utf8("key-" + (batch * PER_BATCH + i)), value(batch * PER_BATCH + i));
            });
        }
        s.snapshotNow(); // S2: its replayed declaration applies the policy, after the replay's checkpoint
        s.rank(snapshotS, 2);
        s.sync(); // the raise is acknowledged and durable
        long declared = declaredMillis(s, snapshotS);
        s.halt();
        awaitOlderThan(declared, KEEP_FOR); // S ages out of level 1 before the reopens

        AtomicInteger pageWrites = new AtomicInteger();
        HookedFileIOFactory counting = new HookedFileIOFactory((op, file) -> {
            if (op == HookedFileIOFactory.Op.WRITE && file.getFileName().toString().endsWith(".page")) pageWrites.incrementAndGet();
        });
        Varve small = Varve.open(config(SMALL_REGION), counting, Agents.invoked());
        assertTrue(pageWrites.get() > 0, "replay wrote no page: it took no checkpoint in the small region");
        assertEquals(List.of(2), ranksOf(small, snapshotS), "the first replay raises S");
        small.halt(); // before its own checkpoint, left to the background, which is stepped by hand

        try (Varve r = Varve.open(config(LARGE_REGION), FileIOFactory.standard(), Agents.invoked())) {
            assertEquals(List.of(2), ranksOf(r, snapshotS), "S, raised to rank 2 before the first crash, is kept for good by level 2");
        }
    }

    /** A value filling most of a page, so that each key takes a page of its own. */
    private static byte[] value(int k) {
        byte[] v = new byte[3000];
        Arrays.fill(v, (byte) k);
        return v;
    }
}
