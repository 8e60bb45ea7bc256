package dev.varve.core.store;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DamageSink;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.page.PageId;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.function.LongPredicate;

/**
 * Offline check of the page files (operator tools): the header and every page's CRC32C and page id, reported to a
 * {@link DamageSink} rather than thrown, so one run names every damaged page. An all-zero page was never written (a
 * file grows when a later page is written first) and is not damage. Reads only.
 */
public final class PageFileCheck {
    private PageFileCheck() {
    }

    /** The page size a page file's header records, or -1 when the header is unreadable. */
    public static int pageSizeOf(FileIOFactory io, Path pageFile) throws IOException {
        try (FileIO f = io.open(pageFile, false)) {
            ByteBuffer h = ByteBuffer.allocate(PartitionFileHeader.LENGTH).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            if (f.read(h, 0) < PartitionFileHeader.PAGE_SIZE_OFFSET + 4 || h.getLong(PartitionFileHeader.MAGIC_OFFSET) != PartitionFileHeader.MAGIC) return -1;
            return h.getInt(PartitionFileHeader.PAGE_SIZE_OFFSET);
        }
    }

    /**
     * Checks every page file of {@code store}; a page that fails its check but that {@code restoredByOpen} says
     * recovery replaces without reading it (a page a crash tore while a checkpoint wrote it, restored from that
     * checkpoint's recovery data) goes to {@code restored}, not to {@code sink}. Returns the pages checked.
     */
    public static long check(PageStore store, FileIOFactory io, LongPredicate restoredByOpen, DamageSink sink, DamageSink restored) {
        long checked = 0;
        ByteBuffer page = ByteBuffer.allocate(store.pageSize());
        for (int fileId : store.fileIds()) {
            Path path = store.pathOf(fileId);
            long pages;
            try (FileIO f = io.open(path, false)) {
                pages = store.pageCount(fileId);
                long size = f.size();
                if (size % store.pageSize() != 0) { // the page after the whole ones (index pages: the header page comes first) is cut short
                    DamageSink to = size > store.pageSize() && restoredByOpen.test(PageId.of(fileId, (int) pages)) ? restored : sink;
                    to.damage(path, size - size % store.pageSize(), "file ends inside a page (" + size + " bytes, pages of " + store.pageSize() + ")");
                }
            } catch (CorruptionException e) {
                sink.damage(path, e.offset(), e.what());
                continue;
            } catch (IOException e) {
                sink.damage(path, 0, "cannot read: " + e.getMessage());
                continue;
            }
            for (int index = 0; index < pages; index++) {
                long pageId = PageId.of(fileId, index);
                try {
                    store.read(pageId, page.clear(), 0);
                    checked++;
                } catch (CorruptionException e) {
                    if (allZero(page)) continue;
                    if (restoredByOpen.test(pageId)) restored.damage(path, e.offset(), e.what());
                    else sink.damage(path, e.offset(), e.what());
                }
            }
        }
        return checked;
    }

    private static boolean allZero(ByteBuffer b) {
        for (int i = 0; i < b.capacity(); i++) if (b.get(i) != 0) return false;
        return true;
    }
}
