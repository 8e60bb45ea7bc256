package dev.varve.core.store;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.ForwardingFileIO;
import dev.varve.core.io.ForwardingFileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.PageId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A page file whose header fails its check (damage, or an IO error reading it) is refused without keeping the file
 * open: the page store opens a file lazily, at its first access, so a running store met every read of a damaged
 * partition with a new open — each one left a file descriptor behind (and an open failed by it kept one too).
 */
@Timeout(60)
class PageFileOpenFailureTest {
    private static final int PAGE = 4096;
    private static final int FILE_ID = PageId.fileId(1, 0);

    @TempDir
    Path dir;

    /** Every file opened through it and not closed yet. */
    private static final class Tracking extends ForwardingFileIOFactory {
        final Set<FileIO> open = ConcurrentHashMap.newKeySet();
        volatile boolean failReads;

        @Override
        public FileIO open(Path file, boolean create) throws IOException {
            FileIO f = new ForwardingFileIO(delegate.open(file, create)) {
                @Override
                public int read(ByteBuffer dst, long position) throws IOException {
                    if (failReads) throw new IOException("injected read error");
                    return super.read(dst, position);
                }

                @Override
                public void close() throws IOException {
                    open.remove(this);
                    super.close();
                }
            };
            open.add(f);
            return f;
        }
    }

    private Path pageFile() {
        PageStore s = new PageStore(new Tracking(), dir, PAGE);
        Path p = s.create(FILE_ID);
        s.close();
        return p;
    }

    @Test
    void aDamagedHeaderIsRefusedWithTheFileClosed() throws IOException {
        Path p = pageFile();
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[]{0x5a}), 2); // inside the magic: the header's CRC no longer matches
        }
        Tracking io = new Tracking();
        PageStore store = new PageStore(io, dir, PAGE);
        ByteBuffer buf = ByteBuffer.allocateDirect(PAGE);
        for (int i = 0; i < 20; i++) {
            assertThrows(CorruptionException.class, () -> store.read(PageId.of(FILE_ID, 0), buf, 0));
            assertTrue(io.open.isEmpty(), "read " + i + " left the damaged page file open: " + io.open);
        }
        store.close();
    }

    @Test
    void anIoErrorReadingTheHeaderIsRefusedWithTheFileClosed() {
        pageFile();
        Tracking io = new Tracking();
        io.failReads = true;
        PageStore store = new PageStore(io, dir, PAGE);
        StorageException e = assertThrows(StorageException.class, () -> store.pageCount(FILE_ID));
        assertTrue(e.getMessage().contains("injected read error"), e.getMessage());
        assertEquals(Set.of(), io.open);
        store.close();
    }
}
