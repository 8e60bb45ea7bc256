package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.StorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletionException;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The OS lock is held on the lock file's inode, not on its name: once {@code varve.lock} is deleted (a cleanup script,
 * an operator tidying up) or replaced, another process opening the store creates a new one, locks it and writes the
 * same files. The store went on checkpointing its pages over that process's as if nothing had happened; it now stops
 * at its next checkpoint, before writing any page, naming the lock file, and refuses writes, as after any failure.
 */
@Timeout(60)
class LockFileLostTest {
    @TempDir
    Path dir;

    @Test
    void aDeletedOrReplacedStoreLockStopsTheNextCheckpointAndTheWrites() throws IOException {
        for (boolean replaced : new boolean[]{false, true}) {
            Path store = dir.resolve("store-" + replaced);
            refusedOnceTheLockIsGone(FixtureSupport.small(store).build(), store.resolve("varve.lock"), replaced);
        }
    }

    @Test
    void aDeletedArchiveLockStopsTheNextCheckpoint() throws IOException {
        Path store = dir.resolve("store");
        refusedOnceTheLockIsGone(FixtureSupport.small(store).build(), store.resolve("archive").resolve("varve.lock"), false);
    }

    /** An idle store finds out at its periodic checkpoint, before a write of its lands in files another process may hold. */
    @Test
    void anIdleStoreFindsItsLockGoneAtItsNextCheckpoint() throws IOException {
        Path store = dir.resolve("idle");
        try (Varve v = Varve.open(FixtureSupport.small(store).build())) {
            v.table("t").put(utf8("k"), utf8("v"));
            for (int i = 0; i < 3; i++) v.checkpoint().join(); // the last ones write nothing, not even a WAL record: idle
            Files.delete(store.resolve("varve.lock"));
            CompletionException e = assertThrows(CompletionException.class, () -> v.checkpoint().join());
            assertTrue(e.getCause().getMessage().contains("varve.lock"), e.getCause().getMessage());
            assertThrows(StorageException.class, () -> v.table("t").put(utf8("k"), utf8("refused")));
        }
    }

    private static void refusedOnceTheLockIsGone(VarveConfig config, Path lockFile, boolean replaced) throws IOException {
        try (Varve v = Varve.open(config)) {
            v.table("t").put(utf8("k"), utf8("before"));
            v.checkpoint().join();
            Files.delete(lockFile);
            if (replaced) Files.writeString(lockFile, ""); // as another process's open makes it anew
            v.table("t").put(utf8("k"), utf8("logged"));
            CompletionException e = assertThrows(CompletionException.class, () -> v.checkpoint().join());
            StorageException cause = assertInstanceOf(StorageException.class, e.getCause());
            assertTrue(cause.getMessage().contains(lockFile.toString()), cause.getMessage());
            assertThrows(StorageException.class, () -> v.table("t").put(utf8("k"), utf8("refused")));
        } // closes without a checkpoint, as after any failure
        try (Varve v = Varve.open(config)) {
            assertArrayEquals(utf8("logged"), v.table("t").get(utf8("k")), "the write acknowledged before the checkpoint failed is recovered");
        }
    }

    /**
     * The store's directory renamed under it (operations.md, The store's directories): the files it holds open take
     * the writes until the next checkpoint, which fails, as every write after it; close does not hang, and the
     * renamed directory recovers every acknowledged write.
     */
    @Test
    void aRenamedStoreDirectoryStopsAtTheNextCheckpointAndOpensWhereItWent() throws IOException {
        Path store = dir.resolve("store");
        Path moved = dir.resolve("moved");
        VarveConfig config = FixtureSupport.small(store).build();
        Varve v = Varve.open(config);
        try {
            v.table("t").put(utf8("k"), utf8("before"));
            v.checkpoint().join();
            Files.move(store, moved);
            v.table("t").put(utf8("k"), utf8("acknowledged"));
            assertThrows(CompletionException.class, () -> v.checkpoint().join());
            assertThrows(StorageException.class, () -> v.table("t").put(utf8("k"), utf8("refused")));
        } finally {
            v.close();
        }
        assertTrue(!Files.exists(store), "nothing was made anew at the old path");
        try (Varve r = Varve.open(config.toBuilder().path(moved).build())) {
            assertArrayEquals(utf8("acknowledged"), r.table("t").get(utf8("k")));
        }
    }
}
