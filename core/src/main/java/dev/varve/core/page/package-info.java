/**
 * The page itself: {@link dev.varve.core.page.PageId} (a {@code long} packing table id, partition and page index, with
 * static compose and extract helpers), the page header layout ({@code PageHeader}) and the byte access every page
 * type uses ({@code Page}, {@code PageAccess}). Values and views only; latching is page memory's.
 */
package dev.varve.core.page;
