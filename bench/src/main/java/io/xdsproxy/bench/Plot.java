package io.xdsproxy.bench;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.imageio.ImageIO;

/**
 * A line chart of a few series against N or time, drawn with Java 2D and written as PNG: no
 * plotting library needed.
 */
final class Plot {

  private static final int WIDTH = 800;
  private static final int HEIGHT = 500;
  private static final int LEFT = 90;
  private static final int RIGHT = 30;
  private static final int TOP = 50;
  private static final int BOTTOM = 60;
  private static final Color[] COLORS = {
    new Color(0xD6, 0x27, 0x28),
    new Color(0x1F, 0x77, 0xB4),
    new Color(0xFF, 0x7F, 0x0E),
    new Color(0x2C, 0xA0, 0x2C)
  };

  private final String title;
  private final String xLabel;
  private final String yLabel;
  private final Map<String, double[][]> series = new LinkedHashMap<>();

  Plot(String title, String xLabel, String yLabel) {
    this.title = title;
    this.xLabel = xLabel;
    this.yLabel = yLabel;
  }

  /** Adds a series of (x, y) points. */
  Plot series(String name, List<double[]> points) {
    series.put(name, points.toArray(new double[0][]));
    return this;
  }

  void write(Path file) throws IOException {
    double maxX =
        series.values().stream()
            .flatMap(java.util.Arrays::stream)
            .mapToDouble(p -> p[0])
            .max()
            .orElse(1);
    double maxY =
        niceCeiling(
            series.values().stream()
                .flatMap(java.util.Arrays::stream)
                .mapToDouble(p -> p[1])
                .max()
                .orElse(1));
    BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
    Graphics2D g = image.createGraphics();
    g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
    g.setColor(Color.WHITE);
    g.fillRect(0, 0, WIDTH, HEIGHT);
    g.setColor(Color.BLACK);
    g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
    g.drawString(title, LEFT, 28);
    g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
    int plotWidth = WIDTH - LEFT - RIGHT;
    int plotHeight = HEIGHT - TOP - BOTTOM;
    for (int tick = 0; tick <= 5; tick++) {
      double y = maxY * tick / 5;
      int py = TOP + plotHeight - (int) (plotHeight * tick / 5.0);
      g.setColor(new Color(0xE0, 0xE0, 0xE0));
      g.drawLine(LEFT, py, LEFT + plotWidth, py);
      g.setColor(Color.BLACK);
      g.drawString(format(y), 10, py + 4);
    }
    double[] xs =
        series.values().stream()
            .flatMap(java.util.Arrays::stream)
            .mapToDouble(p -> p[0])
            .distinct()
            .toArray();
    if (xs.length > 12) {
      // A time series: ticks at round steps rather than at every point, whose labels would overlap.
      double step = niceCeiling(maxX / 10);
      xs = java.util.stream.DoubleStream.iterate(0, x -> x <= maxX, x -> x + step).toArray();
    }
    for (double x : xs) {
      int px = LEFT + (int) (plotWidth * x / maxX);
      g.drawLine(px, TOP + plotHeight, px, TOP + plotHeight + 5);
      g.drawString(format(x), px - 15, TOP + plotHeight + 20);
    }
    g.drawRect(LEFT, TOP, plotWidth, plotHeight);
    g.drawString(xLabel, LEFT + plotWidth / 2 - 40, HEIGHT - 15);
    g.drawString(yLabel, LEFT, TOP - 8);
    int index = 0;
    for (Map.Entry<String, double[][]> entry : series.entrySet()) {
      g.setColor(COLORS[index % COLORS.length]);
      g.setStroke(new BasicStroke(2.5f));
      double[][] points = entry.getValue();
      for (int i = 0; i < points.length; i++) {
        int px = LEFT + (int) (plotWidth * points[i][0] / maxX);
        int py = TOP + plotHeight - (int) (plotHeight * points[i][1] / maxY);
        g.fillOval(px - 4, py - 4, 8, 8);
        if (i > 0) {
          g.drawLine(
              LEFT + (int) (plotWidth * points[i - 1][0] / maxX),
              TOP + plotHeight - (int) (plotHeight * points[i - 1][1] / maxY),
              px,
              py);
        }
      }
      g.drawString(entry.getKey(), LEFT + 15, TOP + 20 + 18 * index);
      index++;
    }
    g.dispose();
    ImageIO.write(image, "png", file.toFile());
  }

  private static double niceCeiling(double value) {
    double magnitude = Math.pow(10, Math.floor(Math.log10(Math.max(value, 1e-9))));
    for (double step : new double[] {1, 2, 2.5, 5, 10}) {
      if (step * magnitude >= value) {
        return step * magnitude;
      }
    }
    return 10 * magnitude;
  }

  private static String format(double value) {
    if (value == Math.rint(value)) {
      return String.format(Locale.ROOT, "%,.0f", value);
    }
    return String.format(Locale.ROOT, value < 10 ? "%.2f" : "%.1f", value);
  }
}
