package dev.varve.core.memory;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageChecksum;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link PageCopier} copies what page memory would read — dirty pages from their frames, clean ones from their file —
 * without loading the pages it reads from the file, and a damaged page is reported as a read through memory reports
 * it, never copied.
 */
@Timeout(60)
class PageCopierTest {
    private static final int PAGE = 1024;
    private static final int FRAMES = 1280;
    private static final int FILE = PageId.fileId(3, 1);
    private static final int PAGES = 200;

    @TempDir
    Path dir;

    private PageStore store;
    private PageMemory memory;

    private void open() {
        store = new PageStore(FileIOFactory.standard(), dir.resolve("pages"), PAGE);
        memory = new PageMemory(store, (long) FRAMES * PAGE, 16L * PAGE);
    }

    @AfterEach
    void close() {
        if (memory != null) memory.close();
        if (store != null) store.close();
    }

    private void write(int index, int version, boolean fresh) {
        Page p = fresh ? memory.acquireNew(PageId.of(FILE, index)) : memory.acquireWrite(PageId.of(FILE, index));
        try {
            p.type(PageHeader.TYPE_LEAF);
            for (int i = PageHeader.SIZE; i < PAGE; i += 8) p.putLong(i, index * 1_000_003L + version * 31L + i);
        } finally {
            memory.releaseWrite(p);
        }
    }

    private void flush() {
        List<Frame> set = memory.beginCheckpoint();
        ByteBuffer image = ByteBuffer.allocateDirect(PAGE);
        for (Frame f : set) {
            memory.copyCheckpointImage(f, image, 0);
            PageChecksum.stamp(image, 0, PAGE);
            store.write(f.heldPageId(), image, 0);
            memory.finishCheckpointPage(f);
        }
    }

    /** Page {@code index} as page memory reads it, header fields that only memory keeps up to date aside. */
    private long bodyOf(Page p) {
        long h = 0;
        for (int i = PageHeader.SIZE; i < PAGE; i += 8) h = h * 31 + p.getLong(i);
        return h;
    }

    @Test
    void runsCopyWhatMemoryReadsWithoutLoadingTheFilesPages() {
        open();
        for (int i = 0; i < PAGES; i++) write(i, 1, true);
        flush();
        memory.close();
        store.close();
        open(); // nothing resident
        for (int i = 0; i < PAGES; i += 3) write(i, 2, false); // every third page dirty and resident
        long readsBefore = memory.pagesRead();
        ByteBuffer copies = ByteBuffer.allocateDirect(PAGES * PAGE);
        memory.copier().copyOutRun(PageId.of(FILE, 0), PAGES, copies, 0);
        assertEquals(readsBefore, memory.pagesRead(), "pages read from the file were not loaded into memory");
        for (int i = 0; i < PAGES; i++) {
            Page expected = memory.acquireRead(PageId.of(FILE, i));
            try {
                Page copy = new Page(copies, i * PAGE, PAGE);
                assertEquals(bodyOf(expected), bodyOf(copy), "page " + i);
                assertEquals(PageId.of(FILE, i), copy.pageId());
            } finally {
                memory.releaseRead(expected);
            }
        }
    }

    @Test
    void aDamagedPageIsReportedNotCopied() throws IOException {
        open();
        for (int i = 0; i < PAGES; i++) write(i, 1, true);
        flush();
        Path file = store.pathOf(FILE);
        memory.close();
        store.close();
        long offset = (long) (57 + 1) * PAGE + 300;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, offset);
            one.put(0, (byte) (one.get(0) ^ 0x10)).rewind();
            ch.write(one, offset);
        }
        open();
        ByteBuffer copies = ByteBuffer.allocateDirect(PAGES * PAGE);
        CorruptionException run = assertThrows(CorruptionException.class, () -> memory.copier().copyOutRun(PageId.of(FILE, 0), PAGES, copies, 0));
        assertTrue(run.getMessage().contains("checksum mismatch") && run.getMessage().contains(file.toString()), run.getMessage());
        CorruptionException one = assertThrows(CorruptionException.class, () -> memory.copier().copyOut(PageId.of(FILE, 57), copies, 0));
        assertTrue(one.getMessage().contains("checksum mismatch"), one.getMessage());
    }
}
