package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Declarations (whose drops wait for their WAL records), writes and rank raises from several threads while checkpoints
 * flush and reclaim back to back — the flush and reclamation force the WAL behind the drops, then take the append gate
 * the declarations wait for — finish in every sync mode (the timeout would catch a WAL force waiting on a lock a
 * declaration holds), and a reopen finds exactly the snapshots the policy keeps, with nothing reclaimed they read.
 */
@Timeout(120)
class DeclarationsDuringCheckpointsTest {
    private static final int THREADS = 3;
    private static final int EACH = 150;

    @TempDir
    Path dir;

    private VarveConfig config(WalSyncMode sync) {
        return FixtureSupport.small(dir).walSyncMode(sync).retention(RankTreePolicy.levels(Retention.keepLast(2), Retention.keepLast(1))).build();
    }

    @ParameterizedTest
    @EnumSource(WalSyncMode.class)
    void declarationsRacingCheckpointsFinishAndReopenAsThePolicyKeeps(WalSyncMode sync) throws Exception {
        List<Long> kept;
        try (Varve s = Varve.open(config(sync))) {
            AtomicBoolean done = new AtomicBoolean();
            CompletableFuture<Void> checkpoints = CompletableFuture.runAsync(() -> {
                while (!done.get()) s.checkpoint().join();
            });
            List<CompletableFuture<Void>> declaring = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                String key = "k" + t;
                declaring.add(CompletableFuture.runAsync(() -> {
                    for (int i = 0; i < EACH; i++) {
                        s.table("t").put(utf8(key), utf8("v" + i));
                        long id = s.snapshotNow();
                        if (i % 10 == 0) {
                            try {
                                s.rank(id, 2);
                            } catch (SnapshotNotFoundException dropped) {
                                // another thread's declarations pushed it out before the raise
                            }
                        }
                    }
                }));
            }
            for (CompletableFuture<Void> d : declaring) d.get();
            done.set(true);
            checkpoints.get();
            kept = s.snapshots().stream().map(SnapshotInfo::id).toList();
        }
        try (Varve r = Varve.open(config(sync))) {
            assertEquals(kept, r.snapshots().stream().map(SnapshotInfo::id).toList());
            r.checkpoint().join();
            for (long id : kept) {
                try (SnapshotView v = r.asOf(id)) {
                    v.table("t").get(utf8("k0")); // readable: nothing it needs was reclaimed
                }
            }
            assertEquals(List.of(), r.danglingArchiveMappings());
        }
    }
}
