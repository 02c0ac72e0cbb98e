import 'uplot/dist/uPlot.min.css';
import './base.css';
import './kernels.css';
import './runs.css';
import './memory.css';
import './profile.css';
import './course.css';
import './journey.css';
