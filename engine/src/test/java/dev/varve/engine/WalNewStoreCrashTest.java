package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FaultyFileIOFactory.Kind;
import dev.varve.core.io.FaultyFileIOFactory.Op;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A new store's id becomes durable with its first checkpoint's start marker, which its first open writes after it has
 * created the WAL's first segment: a crash in between leaves a segment and no id, and the next open picks another id.
 * That segment must not name the id that was lost (it would be refused as another store's). A crash at each file
 * operation from the WAL's first to that marker's rename, then a power loss: the store opens, and works.
 */
@Timeout(300)
class WalNewStoreCrashTest {
    @TempDir
    Path tmp;

    @Test
    void aNewStoreCrashedBeforeItsIdIsDurableReopens() throws Exception {
        int crashes = 0;
        for (int n = 1; ; n++) {
            Path dir = tmp.resolve("store-" + n);
            VarveConfig config = FixtureSupport.small(dir).partitions(1).build();
            FaultyFileIOFactory io = new FaultyFileIOFactory(n);
            io.crashAt(fromFirstWalOpUntilStartMarker(n));
            try {
                Varve store = Varve.open(config, io);
                if (io.crashedAt() == null) {
                    store.close();
                    break; // the n-th operation came after the start marker: the id is durable from there on
                }
                store.halt();
            } catch (RuntimeException e) {
                assertTrue(io.crashedAt() != null, "the open failed without the crash: " + e);
            }
            crashes++;
            io.powerLoss();
            try (Varve store = Varve.open(config, FileIOFactory.standard())) {
                store.table("t").put(FixtureSupport.utf8("k"), FixtureSupport.utf8("v" + n));
                store.checkpoint().get();
            }
            try (Varve store = Varve.open(config, FileIOFactory.standard())) {
                assertArrayEquals(FixtureSupport.utf8("v" + n), store.table("t").get(FixtureSupport.utf8("k")));
            }
        }
        assertTrue(crashes > 2, "crashed at " + crashes + " operations only");
    }

    /**
     * The {@code n}-th file operation counted from the first one on a WAL file, up to and including the rename that
     * puts the first start marker in place; nothing after it.
     */
    private static Predicate<Op> fromFirstWalOpUntilStartMarker(int n) {
        boolean[] wal = {false};
        boolean[] marked = {false};
        int[] seen = {0};
        return op -> {
            if (marked[0]) return false;
            wal[0] |= op.names("wal-");
            if (!wal[0]) return false;
            marked[0] = op.kind() == Kind.MOVE && op.target() != null && op.target().getFileName().toString().endsWith("-start.bin");
            return ++seen[0] == n;
        };
    }
}
