package dev.varve.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A small line chart written as SVG by hand (no charting dependency): a title, axes with round-numbered ticks and
 * grid lines, one polyline per series, and a legend. Series with no points, or only negative values (unknown), are
 * listed in the legend as "n/a" and not drawn.
 */
final class SvgChart {
    static final String[] COLORS = {"#1f77b4", "#2ca02c", "#17becf", "#0b3d91", "#ff7f0e", "#d62728", "#9467bd", "#8c564b"};

    /** One line: its points, x and y of the same length. */
    record Series(String name, double[] x, double[] y, boolean dashed) {
    }

    private final String title;
    private final String xLabel;
    private final String yLabel;
    private final List<Series> series = new ArrayList<>();
    private final int width;
    private final int height;

    SvgChart(String title, String xLabel, String yLabel) {
        this(title, xLabel, yLabel, 940, 380);
    }

    SvgChart(String title, String xLabel, String yLabel, int width, int height) {
        this.title = title;
        this.xLabel = xLabel;
        this.yLabel = yLabel;
        this.width = width;
        this.height = height;
    }

    SvgChart add(String name, double[] x, double[] y, boolean dashed) {
        if (x.length != y.length) throw new IllegalArgumentException(name + ": " + x.length + " x for " + y.length + " y");
        series.add(new Series(name, x, y, dashed));
        return this;
    }

    private static boolean drawable(Series s) {
        for (double v : s.y) if (v >= 0 && Double.isFinite(v)) return true;
        return false;
    }

    /** A round step (1, 2 or 5 times a power of ten) that cuts {@code range} into about {@code parts} parts. */
    static double niceStep(double range, int parts) {
        if (!(range > 0)) return 1;
        double raw = range / parts;
        double mag = Math.pow(10, Math.floor(Math.log10(raw)));
        double f = raw / mag;
        return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
    }

    static String tick(double v) {
        double a = Math.abs(v);
        if (a >= 1e9) return trim(v / 1e9) + "G";
        if (a >= 1e6) return trim(v / 1e6) + "M";
        if (a >= 1e4) return trim(v / 1e3) + "k";
        return trim(v);
    }

    private static String trim(double v) {
        if (v == Math.rint(v)) return Long.toString((long) v);
        String s = String.format(Locale.ROOT, "%.2f", v);
        return s.replaceAll("0+$", "").replaceAll("\\.$", "");
    }

    static String escape(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }

    private static String num(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    String toSvg() {
        int left = 78;
        int right = 235; // legend
        int top = 40;
        int bottom = 50;
        double plotW = width - left - right;
        double plotH = height - top - bottom;
        double xMax = 0;
        double yMax = 0;
        for (Series s : series) {
            for (int i = 0; i < s.x.length; i++) {
                if (!(s.y[i] >= 0) || !Double.isFinite(s.y[i])) continue;
                xMax = Math.max(xMax, s.x[i]);
                yMax = Math.max(yMax, s.y[i]);
            }
        }
        double xStep = niceStep(xMax, 8);
        double yStep = niceStep(yMax, 5);
        double xTop = Math.max(xStep, Math.ceil(xMax / xStep) * xStep);
        double yTop = Math.max(yStep, Math.ceil(yMax / yStep) * yStep);
        StringBuilder sb = new StringBuilder();
        sb.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        sb.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(width).append("\" height=\"").append(height)
                .append("\" viewBox=\"0 0 ").append(width).append(' ').append(height)
                .append("\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n");
        sb.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        sb.append("<text x=\"").append(width / 2).append("\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">")
                .append(escape(title)).append("</text>\n");
        // grid and ticks
        for (double y = 0; y <= yTop + yStep / 2; y += yStep) {
            double py = top + plotH - y / yTop * plotH;
            sb.append("<line x1=\"").append(left).append("\" y1=\"").append(num(py)).append("\" x2=\"").append(num(left + plotW))
                    .append("\" y2=\"").append(num(py)).append("\" stroke=\"#e0e0e0\"/>\n");
            sb.append("<text x=\"").append(left - 6).append("\" y=\"").append(num(py + 4)).append("\" text-anchor=\"end\">")
                    .append(tick(y)).append("</text>\n");
        }
        for (double x = 0; x <= xTop + xStep / 2; x += xStep) {
            double px = left + x / xTop * plotW;
            sb.append("<line x1=\"").append(num(px)).append("\" y1=\"").append(top).append("\" x2=\"").append(num(px))
                    .append("\" y2=\"").append(num(top + plotH)).append("\" stroke=\"#f0f0f0\"/>\n");
            sb.append("<text x=\"").append(num(px)).append("\" y=\"").append(num(top + plotH + 16)).append("\" text-anchor=\"middle\">")
                    .append(tick(x)).append("</text>\n");
        }
        sb.append("<rect x=\"").append(left).append("\" y=\"").append(top).append("\" width=\"").append(num(plotW)).append("\" height=\"")
                .append(num(plotH)).append("\" fill=\"none\" stroke=\"#333\"/>\n");
        sb.append("<text x=\"").append(num(left + plotW / 2)).append("\" y=\"").append(height - 12).append("\" text-anchor=\"middle\">")
                .append(escape(xLabel)).append("</text>\n");
        sb.append("<text transform=\"translate(16,").append(num(top + plotH / 2)).append(") rotate(-90)\" text-anchor=\"middle\">")
                .append(escape(yLabel)).append("</text>\n");
        // lines and legend
        int li = 0;
        for (Series s : series) {
            String color = COLORS[li % COLORS.length];
            double ly = top + 10 + li * 20;
            double lx = left + plotW + 14;
            boolean draw = drawable(s);
            if (draw) {
                StringBuilder pts = new StringBuilder();
                for (int i = 0; i < s.x.length; i++) {
                    if (!(s.y[i] >= 0) || !Double.isFinite(s.y[i])) continue;
                    double px = left + s.x[i] / xTop * plotW;
                    double py = top + plotH - s.y[i] / yTop * plotH;
                    if (pts.length() > 0) pts.append(' ');
                    pts.append(num(px)).append(',').append(num(py));
                }
                sb.append("<polyline fill=\"none\" stroke=\"").append(color).append("\" stroke-width=\"1.8\"")
                        .append(s.dashed ? " stroke-dasharray=\"6,3\"" : "").append(" points=\"").append(pts).append("\"/>\n");
                sb.append("<line x1=\"").append(num(lx)).append("\" y1=\"").append(num(ly)).append("\" x2=\"").append(num(lx + 22))
                        .append("\" y2=\"").append(num(ly)).append("\" stroke=\"").append(color).append("\" stroke-width=\"2.5\"")
                        .append(s.dashed ? " stroke-dasharray=\"6,3\"" : "").append("/>\n");
            }
            sb.append("<text x=\"").append(num(lx + 28)).append("\" y=\"").append(num(ly + 4)).append("\"")
                    .append(draw ? "" : " fill=\"#999\"").append('>').append(escape(s.name + (draw ? "" : " (n/a)"))).append("</text>\n");
            li++;
        }
        sb.append("</svg>\n");
        return sb.toString();
    }
}
