package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.StorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import static dev.varve.engine.FixtureSupport.assertSameFiles;
import static dev.varve.engine.FixtureSupport.filesUnder;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A store whose trees are of another format version is refused before recovery writes to it. The refusal came when
 * the catalog was first read, after recovery had completed an interrupted checkpoint and deleted what it cut: an
 * older build's store, refused, was changed all the same.
 */
@Timeout(60)
class OtherTreeFormatTest {
    private static final int PAGE = 4096;

    @TempDir
    Path dir;

    @Test
    void aCrashedStoreOfAnotherTreeFormatIsRefusedWithNothingChanged() throws IOException {
        VarveConfig config = FixtureSupport.small(dir).build();
        NoEndMarker io = new NoEndMarker();
        Varve store = Varve.open(config, io);
        for (int i = 0; i < 50; i++) store.table("t").put(utf8("k" + i), utf8("v" + i));
        store.checkpoint().join();
        for (int i = 50; i < 100; i++) store.table("t").put(utf8("k" + i), utf8("v" + i));
        io.armed = true; // the next checkpoint writes its pages and stops before its end marker
        assertThrows(ExecutionException.class, () -> store.checkpoint().get());
        store.halt(); // a crash in that checkpoint: recovery would restore its pages and complete it before reading a tree
        FixtureStores.setTreeFormatVersion(dir.resolve("pages/t00000-p00000.page"), PAGE, 1); // the catalog's: an older format
        Map<Path, byte[]> before = filesUnder(dir);
        for (boolean readOnly : new boolean[]{true, false}) {
            StorageException e = assertThrows(StorageException.class, () -> (readOnly ? Varve.openReadOnly(config) : Varve.open(config)).close());
            assertTrue(e.getMessage().contains("unsupported B+tree format version 1"), e.getMessage());
            assertSameFiles(before, filesUnder(dir));
        }
    }
}
