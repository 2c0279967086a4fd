import { Controller, Get, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { LockMetrics } from './lock-metrics';

/** GET /metrics: the lock metrics (wait and hold histograms, counters) in Prometheus's text format. */
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: LockMetrics) {}

  @Get()
  scrape(@Req() request: Request, @Res() response: Response): void {
    this.metrics.exporter.getMetricsRequestHandler(request, response);
  }
}
