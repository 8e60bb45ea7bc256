package dev.varve.core.tree;

import dev.varve.core.page.Page;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageHeader;
import dev.varve.core.page.PageId;

/**
 * Removes entries and gives their space back: an emptied subtree is cut out of its parent, an underfull page (below
 * a quarter of its usable bytes) is merged with a sibling when both fit in one page, and a root left with a single
 * child is replaced by that child. Freed pages go to the free list for the next allocation. Writer side only.
 *
 * <p>Design note: siblings are merged, not rebalanced, because moving entries changes the parent's separator,
 * which may grow and overflow the parent, turning a delete into a split. The one exception is an inner page left
 * with no keys (one child) whose sibling is too full to merge with: it takes one child from the sibling through the
 * parent (a rotation), but only when the parent has room for the new separator. Otherwise it stays a correct
 * pass-through page until a later merge absorbs it.
 */
final class TreeRemover {
    private final PageAccess pages;
    private final int fileId;
    private final long metaId;
    private final PageAllocator allocator;
    private final Page scratch;
    private final TreePath path = new TreePath();
    /** The tree's reads of its top. */
    private final MetaPage.TopReader tops;
    private final byte[] separator;
    /** The key a rotation moves up into the parent. */
    private final byte[] spare;
    /** Free bytes of the parent when {@link #readSeparator} read it. */
    private int parentFree;

    TreeRemover(PageAccess pages, int fileId, MetaPage.TopReader tops, PageAllocator allocator, Page scratch, int maxKeyBytes) {
        this.pages = pages;
        this.fileId = fileId;
        this.metaId = PageId.of(fileId, MetaPage.META_INDEX);
        this.tops = tops;
        this.allocator = allocator;
        this.scratch = scratch;
        this.separator = new byte[maxKeyBytes];
        this.spare = new byte[maxKeyBytes];
    }

    /** Removes {@code key}; true when it was present. Changes no page when it was not. */
    boolean remove(byte[] key) {
        path.descend(pages, tops.read(pages), key);
        int pos;
        Page leaf = path.acquireLeafForRead(pages);
        try {
            pos = LeafPage.search(leaf, key);
        } finally {
            pages.releaseRead(leaf);
        }
        if (pos < 0) return false;
        boolean empty;
        leaf = path.acquireLeafForWrite(pages);
        try {
            int offset = SlottedPage.slot(leaf, pos);
            if (!LeafPage.isInline(leaf, offset)) OverflowChain.free(pages, allocator, LeafPage.overflowId(leaf, offset));
            SlottedPage.remove(leaf, pos);
            empty = SlottedPage.count(leaf) == 0;
        } finally {
            pages.releaseWrite(leaf);
        }
        if (path.depth() > 0) {
            rebalance(empty);
            collapseRoot();
        }
        Page meta = pages.acquireWrite(metaId);
        try {
            MetaPage.entryCount(meta, MetaPage.entryCount(meta) - 1);
        } finally {
            pages.releaseWrite(meta);
        }
        return true;
    }

    /** Walks the path bottom-up while pages keep changing. */
    private void rebalance(boolean childEmpty) {
        for (int level = path.depth() - 1; level >= 0; level--) {
            long parentId = path.pageId(level);
            int index = path.childIndex(level);
            int keys;
            long child;
            long leftSibling;
            long rightSibling;
            Page parent = pages.acquireRead(parentId);
            try {
                keys = SlottedPage.count(parent);
                child = InnerPage.child(parent, index);
                leftSibling = index > 0 ? InnerPage.child(parent, index - 1) : PageId.NONE;
                rightSibling = index < keys ? InnerPage.child(parent, index + 1) : PageId.NONE;
            } finally {
                pages.releaseRead(parent);
            }
            if (childEmpty) {
                // a parent passing through to an empty subtree is empty as well: the cut happens further up
                if (keys == 0) continue;
                dropEmptySubtree(level, parentId, index);
                childEmpty = false;
                continue;
            }
            if (keys == 0 || usedBytes(child) >= SlottedPage.usableBytes(pages.pageSize()) / 4) return;
            boolean changed = (leftSibling != PageId.NONE && merge(parentId, index - 1, leftSibling, child))
                    || (rightSibling != PageId.NONE && merge(parentId, index, child, rightSibling))
                    || (isPassThrough(child) && (
                            (leftSibling != PageId.NONE && rotateFromLeft(parentId, index - 1, leftSibling, child))
                            || (rightSibling != PageId.NONE && rotateFromRight(parentId, index, child, rightSibling))));
            if (!changed) return;
        }
    }

    private int usedBytes(long pageId) {
        Page page = pages.acquireRead(pageId);
        try {
            return SlottedPage.usedBytes(page);
        } finally {
            pages.releaseRead(page);
        }
    }

    /** Frees the empty subtree below {@code level} (the path's pages, each with one child) and cuts it out. */
    private void dropEmptySubtree(int level, long parentId, int index) {
        allocator.free(path.leafId());
        for (int l = path.depth() - 1; l > level; l--) allocator.free(path.pageId(l));
        Page parent = pages.acquireWrite(parentId);
        try {
            if (index == 0) {
                InnerPage.firstChild(parent, InnerPage.child(parent, 1));
                SlottedPage.remove(parent, 0);
            } else {
                SlottedPage.remove(parent, index - 1);
            }
        } finally {
            pages.releaseWrite(parent);
        }
    }

    /**
     * Moves every cell of {@code rightId} into {@code leftId} (inner pages pull separator {@code key} down between
     * them) when all fits in one page, frees the right page and drops its separator from the parent.
     */
    private boolean merge(long parentId, int key, long leftId, long rightId) {
        int separatorLength;
        Page parent = pages.acquireRead(parentId);
        try {
            int offset = SlottedPage.slot(parent, key);
            separatorLength = InnerPage.keyLength(parent, offset);
            parent.getBytes(offset + InnerPage.KEY_OFFSET, separator, 0, separatorLength);
        } finally {
            pages.releaseRead(parent);
        }
        Page right = pages.acquireRead(rightId);
        try {
            boolean inner = right.type() == PageHeader.TYPE_INNER;
            int pulledDown = inner ? InnerPage.cellSize(separatorLength) : 0;
            int needed = SlottedPage.usedBytes(right) + (inner ? pulledDown + SlottedPage.SLOT_BYTES : 0);
            Page left = pages.acquireRead(leftId);
            try {
                if (SlottedPage.freeBytes(left) < needed) return false;
            } finally {
                pages.releaseRead(left);
            }
            left = pages.acquireWrite(leftId);
            try {
                if (inner) {
                    int offset = SlottedPage.append(left, pulledDown, SlottedPage.keyHead(separator, separatorLength), scratch);
                    InnerPage.writeCell(left, offset, separator, separatorLength, InnerPage.firstChild(right));
                }
                int count = SlottedPage.count(right);
                for (int i = 0; i < count; i++) SlottedPage.appendCopy(right, i, left, scratch);
            } finally {
                pages.releaseWrite(left);
            }
        } finally {
            pages.releaseRead(right);
        }
        allocator.free(rightId);
        parent = pages.acquireWrite(parentId);
        try {
            SlottedPage.remove(parent, key);
        } finally {
            pages.releaseWrite(parent);
        }
        return true;
    }

    private boolean isPassThrough(long pageId) {
        Page page = pages.acquireRead(pageId);
        try {
            return page.type() == PageHeader.TYPE_INNER && SlottedPage.count(page) == 0;
        } finally {
            pages.releaseRead(page);
        }
    }

    /**
     * Gives the inner page {@code childId}, left with no keys and too big a sibling to merge with, the last child of
     * its left sibling: the parent's separator {@code key} moves down into the child, the sibling's last key moves up
     * into the parent. Only when the sibling keeps a key and the parent has room for the longer separator.
     */
    private boolean rotateFromLeft(long parentId, int key, long leftId, long childId) {
        int down = readSeparator(parentId, key);
        if (down < 0) return false;
        int up;
        long movedChild;
        int leftKeys;
        Page left = pages.acquireRead(leftId);
        try {
            leftKeys = SlottedPage.count(left);
            if (leftKeys < 2) return false;
            int offset = SlottedPage.slot(left, leftKeys - 1);
            up = InnerPage.keyLength(left, offset);
            if (up > down + parentFree) return false;
            left.getBytes(offset + InnerPage.KEY_OFFSET, spare, 0, up);
            movedChild = left.getLong(offset + InnerPage.CHILD_OFFSET);
        } finally {
            pages.releaseRead(left);
        }
        Page child = pages.acquireWrite(childId);
        try {
            int offset = SlottedPage.insert(child, 0, InnerPage.cellSize(down), SlottedPage.keyHead(separator, down), scratch);
            InnerPage.writeCell(child, offset, separator, down, InnerPage.firstChild(child));
            InnerPage.firstChild(child, movedChild);
        } finally {
            pages.releaseWrite(child);
        }
        left = pages.acquireWrite(leftId);
        try {
            SlottedPage.remove(left, leftKeys - 1);
        } finally {
            pages.releaseWrite(left);
        }
        replaceSeparator(parentId, key, up);
        return true;
    }

    /** As {@link #rotateFromLeft}, taking the first child of the right sibling. */
    private boolean rotateFromRight(long parentId, int key, long childId, long rightId) {
        int down = readSeparator(parentId, key);
        if (down < 0) return false;
        int up;
        long movedChild;
        long newFirst;
        Page right = pages.acquireRead(rightId);
        try {
            if (SlottedPage.count(right) < 2) return false;
            int offset = SlottedPage.slot(right, 0);
            up = InnerPage.keyLength(right, offset);
            if (up > down + parentFree) return false;
            right.getBytes(offset + InnerPage.KEY_OFFSET, spare, 0, up);
            movedChild = InnerPage.firstChild(right);
            newFirst = right.getLong(offset + InnerPage.CHILD_OFFSET);
        } finally {
            pages.releaseRead(right);
        }
        Page child = pages.acquireWrite(childId);
        try {
            int offset = SlottedPage.append(child, InnerPage.cellSize(down), SlottedPage.keyHead(separator, down), scratch);
            InnerPage.writeCell(child, offset, separator, down, movedChild);
        } finally {
            pages.releaseWrite(child);
        }
        right = pages.acquireWrite(rightId);
        try {
            InnerPage.firstChild(right, newFirst);
            SlottedPage.remove(right, 0);
        } finally {
            pages.releaseWrite(right);
        }
        replaceSeparator(parentId, key, up);
        return true;
    }

    /** Copies separator {@code key} of the parent into {@link #separator}, notes the parent's free bytes. */
    private int readSeparator(long parentId, int key) {
        Page parent = pages.acquireRead(parentId);
        try {
            int offset = SlottedPage.slot(parent, key);
            int length = InnerPage.keyLength(parent, offset);
            parent.getBytes(offset + InnerPage.KEY_OFFSET, separator, 0, length);
            parentFree = SlottedPage.freeBytes(parent);
            return length;
        } finally {
            pages.releaseRead(parent);
        }
    }

    /** Replaces the key of parent cell {@code key} with the first {@code length} bytes of {@link #spare}. */
    private void replaceSeparator(long parentId, int key, int length) {
        Page parent = pages.acquireWrite(parentId);
        try {
            long child = parent.getLong(SlottedPage.slot(parent, key) + InnerPage.CHILD_OFFSET);
            SlottedPage.remove(parent, key);
            int offset = SlottedPage.insert(parent, key, InnerPage.cellSize(length), SlottedPage.keyHead(spare, length), scratch);
            InnerPage.writeCell(parent, offset, spare, length, child);
        } finally {
            pages.releaseWrite(parent);
        }
    }

    /** Replaces a root with no keys by its only child, as often as it takes. */
    private void collapseRoot() {
        while (true) {
            long root;
            Page meta = pages.acquireRead(metaId);
            try {
                root = MetaPage.root(meta);
            } finally {
                pages.releaseRead(meta);
            }
            long child;
            Page page = pages.acquireRead(root);
            try {
                if (page.type() != PageHeader.TYPE_INNER || SlottedPage.count(page) > 0) return;
                child = InnerPage.firstChild(page);
            } finally {
                pages.releaseRead(page);
            }
            allocator.free(root);
            meta = pages.acquireWrite(metaId);
            try {
                MetaPage.root(meta, child);
                MetaPage.height(meta, MetaPage.height(meta) - 1);
            } finally {
                pages.releaseWrite(meta);
            }
        }
    }

    /**
     * Empties the tree: page 1 becomes an empty root leaf and every other page but the meta page becomes the erased
     * range, free without being rewritten — so emptying touches two pages however large the partition was. The
     * allocator rewrites each erased page when it hands it out, which is when a snapshot captures its old contents.
     */
    void clear() {
        Page meta = pages.acquireWrite(metaId);
        try {
            int pageCount = MetaPage.pageCount(meta);
            long rootId = PageId.of(fileId, MetaPage.META_INDEX + 1);
            Page root = pages.acquireWrite(rootId);
            try {
                SlottedPage.init(root, PageHeader.TYPE_LEAF);
            } finally {
                pages.releaseWrite(root);
            }
            MetaPage.root(meta, rootId);
            MetaPage.height(meta, 1);
            MetaPage.freeHead(meta, PageId.NONE);
            MetaPage.erasedFrom(meta, pageCount > MetaPage.META_INDEX + 2 ? MetaPage.META_INDEX + 2 : 0);
            MetaPage.freeCount(meta, pageCount - 2);
            MetaPage.entryCount(meta, 0);
        } finally {
            pages.releaseWrite(meta);
        }
    }
}
