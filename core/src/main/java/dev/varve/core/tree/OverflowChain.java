package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;

/** Writes, reads and frees the overflow page chains that hold values too large to live inline in a leaf. */
final class OverflowChain {
    private OverflowChain() {
    }

    /** Number of pages a chain for {@code valueLength} bytes takes. */
    static int pageCount(int pageSize, int valueLength) {
        int capacity = OverflowPage.capacity(pageSize);
        return (valueLength + capacity - 1) / capacity;
    }

    /** Stores {@code value} (at least one byte) in a new chain and returns its first page id. */
    static long write(PageAccess pages, PageAllocator allocator, byte[] value) {
        int capacity = OverflowPage.capacity(pages.pageSize());
        long first = allocator.allocate();
        long current = first;
        for (int position = 0; ; ) {
            int length = Math.min(capacity, value.length - position);
            // the next id is needed before this page is written; allocating it first keeps ids in chain order
            long next = position + length < value.length ? allocator.allocate() : PageId.NONE;
            Page page = pages.acquireNew(current);
            try {
                page.type(PageHeader.TYPE_OVERFLOW);
                OverflowPage.next(page, next);
                OverflowPage.length(page, length);
                page.putBytes(OverflowPage.DATA_OFFSET, value, position, length);
            } finally {
                pages.releaseWrite(page);
            }
            if (next == PageId.NONE) return first;
            current = next;
            position += length;
        }
    }

    /** Reads a chain of {@code valueLength} bytes starting at {@code first}. */
    static byte[] read(PageAccess pages, long first, int valueLength) {
        byte[] value = new byte[valueLength];
        long current = first;
        int position = 0;
        while (position < valueLength) {
            if (current == PageId.NONE) throw new CorruptTreeException("overflow chain ends early", first);
            Page page = pages.acquireRead(current);
            try {
                checkType(page, current);
                int length = OverflowPage.length(page);
                if (length <= 0 || length > OverflowPage.capacity(page.size()) || length > valueLength - position)
                    throw new CorruptTreeException("overflow page length " + length + " out of range", current);
                page.getBytes(OverflowPage.DATA_OFFSET, value, position, length);
                position += length;
                current = OverflowPage.next(page);
            } finally {
                pages.releaseRead(page);
            }
        }
        if (current != PageId.NONE) throw new CorruptTreeException("overflow chain longer than its value", first);
        return value;
    }

    /** Frees every page of the chain starting at {@code first}. */
    static void free(PageAccess pages, PageAllocator allocator, long first) {
        long current = first;
        while (current != PageId.NONE) {
            long next;
            Page page = pages.acquireRead(current);
            try {
                checkType(page, current);
                next = OverflowPage.next(page);
            } finally {
                pages.releaseRead(page);
            }
            allocator.free(current);
            current = next;
        }
    }

    static void checkType(Page page, long pageId) {
        if (page.type() != PageHeader.TYPE_OVERFLOW)
            throw new CorruptTreeException("expected an overflow page, found " + PageHeader.typeName(page.type()), pageId);
    }
}
