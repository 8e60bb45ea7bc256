package dev.varve.core.tree;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageStore;

import java.nio.ByteBuffer;

/**
 * Salvage of a damaged partition file (operator tools): reads every page straight from the page file, without the
 * tree above it, and hands over each entry of each leaf whose page — and overflow chain, for a long value — still
 * passes its checksum. A page that fails is reported as lost (its entries with it), and so are the pages a
 * truncation took (a file without a page, or ending inside one). Because no inner page is
 * needed, a damaged inner page or meta page loses nothing. Pages a destroy of the partition erased are left out:
 * they keep their old leaves until they are taken again, and only the meta page says where they start (when it is
 * damaged every leaf of the file is read, and a destroyed partition's old entries cannot be told from its own). Reads
 * only.
 */
public final class LeafSalvage {
    /** Receives what salvage finds. */
    public interface Sink {
        /** An intact entry. */
        void entry(byte[] key, byte[] value);

        /** A page that fails its check (key null), or a value whose overflow chain does (key given). */
        void lost(long pageId, byte[] key, String why);
    }

    private LeafSalvage() {
    }

    /** Salvages partition file {@code fileId} of {@code store}. */
    public static void salvage(PageStore store, int fileId, Sink sink) {
        PageAccess pages = new DiskPages(store);
        BPlusTree.refuseOtherFormat(store, fileId); // its leaves would be misread, not salvaged
        reportCutShort(store, fileId, sink);
        long count = Math.min(store.pageCount(fileId), erasedFrom(pages, fileId));
        for (int index = 0; index < count; index++) {
            long pageId = PageId.of(fileId, index);
            Page page;
            try {
                page = pages.acquireRead(pageId);
            } catch (CorruptionException e) {
                if (!DiskPages.neverWritten(store, pageId)) sink.lost(pageId, null, e.getMessage());
                continue;
            }
            try {
                if (page.type() == PageHeader.TYPE_LEAF) leafEntries(pages, pageId, page, sink);
            } finally {
                pages.releaseRead(page);
            }
        }
    }

    /**
     * Reports the pages a truncation took: every page file has its header page and then whole pages, the meta page
     * first, so a file without a page, or ending inside one, was cut short. Those pages are not there to read, and
     * without this their entries went missing from a salvage that said nothing of them.
     */
    private static void reportCutShort(PageStore store, int fileId, Sink sink) {
        long bytes = store.bytesOf(fileId);
        long whole = store.pageCount(fileId);
        if (whole == 0) {
            sink.lost(PageId.of(fileId, MetaPage.META_INDEX), null, "the file ends at byte " + bytes + ", before its first page (the meta page): "
                    + "cut short, every page and entry it held is missing");
        } else if (bytes % store.pageSize() != 0) {
            sink.lost(PageId.of(fileId, (int) whole), null, "the file ends inside this page (" + bytes + " bytes, pages of " + store.pageSize()
                    + "): cut short, the page and any after it are missing");
        }
    }

    /**
     * Where the pages a destroy erased start, as the partition's meta page says ({@link TreeRemover#clear}); none
     * erased, or a meta page that fails its check, reads as {@link Integer#MAX_VALUE} (the loop reports the latter).
     */
    private static int erasedFrom(PageAccess pages, int fileId) {
        Page meta;
        try {
            meta = pages.acquireRead(PageId.of(fileId, MetaPage.META_INDEX));
        } catch (CorruptionException e) {
            return Integer.MAX_VALUE;
        }
        try {
            int erased = meta.type() == PageHeader.TYPE_META ? MetaPage.erasedFrom(meta) : 0;
            return erased > MetaPage.META_INDEX + 1 ? erased : Integer.MAX_VALUE;
        } finally {
            pages.releaseRead(meta);
        }
    }

    /** Hands over the entries of one intact leaf; a value whose overflow chain fails is reported lost. */
    private static void leafEntries(PageAccess pages, long pageId, Page page, Sink sink) {
        for (int i = 0; i < SlottedPage.count(page); i++) {
            int offset = SlottedPage.slot(page, i);
            byte[] key = LeafPage.key(page, i);
            int length = LeafPage.valueLength(page, offset);
            if (LeafPage.isInline(page, offset)) {
                sink.entry(key, page.getBytes(LeafPage.valueOffset(page, offset), length));
                continue;
            }
            try {
                sink.entry(key, OverflowChain.read(pages, LeafPage.overflowId(page, offset), length));
            } catch (StorageException e) {
                sink.lost(pageId, key, "overflow chain of a " + length + "-byte value: " + e.getMessage());
            }
        }
    }

    /** Pages read from the page file on every acquire, checked, never cached; writes refused. */
    private static final class DiskPages implements PageAccess.ReadOnly {
        private final PageStore store;
        /** Released direct buffers, reused (a leaf and one overflow page are held at most). */
        private final java.util.ArrayDeque<ByteBuffer> free = new java.util.ArrayDeque<>();

        DiskPages(PageStore store) {
            this.store = store;
        }

        /** True when the page's bytes are all zero: a hole the file got when a later page was written first. */
        static boolean neverWritten(PageStore store, long pageId) {
            ByteBuffer b = ByteBuffer.allocate(store.pageSize());
            try {
                store.read(pageId, b, 0);
            } catch (CorruptionException e) {
                for (int i = 0; i < b.capacity(); i++) if (b.get(i) != 0) return false;
                return true;
            }
            return false;
        }

        @Override
        public int pageSize() {
            return store.pageSize();
        }

        @Override
        public Page acquireRead(long pageId) {
            ByteBuffer b = free.isEmpty() ? ByteBuffer.allocateDirect(store.pageSize()) : free.pop();
            try {
                store.read(pageId, b, 0);
            } catch (RuntimeException e) {
                free.push(b);
                throw e;
            }
            return new Page(b, 0, store.pageSize());
        }

        @Override
        public void releaseRead(Page page) {
            free.push(page.buffer());
        }

        @Override
        public String readOnlyReason() {
            return "salvage reads only";
        }
    }
}
