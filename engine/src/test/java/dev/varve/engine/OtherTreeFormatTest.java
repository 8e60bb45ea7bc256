package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.StorageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.zip.CRC32C;

import static dev.varve.engine.FixtureSupport.assertSameFiles;
import static dev.varve.engine.FixtureSupport.filesUnder;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("pages/t00000-p00000.page").toFile(), "rw")) {
            byte[] page = new byte[PAGE];
            f.seek(PAGE); // index 0, after the file header: the catalog tree's meta page
            f.readFully(page);
            ByteBuffer b = ByteBuffer.wrap(page).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(1, b.get(12), "a meta page"); // PageHeader.TYPE_OFFSET, TYPE_META
            b.putInt(32 + 4, 1); // MetaPage.VERSION_OFFSET: an older format
            CRC32C crc = new CRC32C(); // PageChecksum: every byte but the 4-byte field at offset 8
            crc.update(page, 0, 8);
            crc.update(page, 12, PAGE - 12);
            b.putInt(8, (int) crc.getValue());
            f.seek(PAGE);
            f.write(page);
        }
        Map<Path, byte[]> before = filesUnder(dir);
        for (boolean readOnly : new boolean[]{true, false}) {
            StorageException e = assertThrows(StorageException.class, () -> (readOnly ? Varve.openReadOnly(config) : Varve.open(config)).close());
            assertTrue(e.getMessage().contains("unsupported B+tree format version 1"), e.getMessage());
            assertSameFiles(before, filesUnder(dir));
        }
    }
}
